//! The language model: token embedding → a stack of blocks → final LayerNorm → output head.
//!
//! - **RSF-LM** ([`Arch::Rsf`]): the embedding `e` `[b, s, w]` is copied into both halves of
//!   a `2w` stream, `[e, e]`; reversible causal blocks (F = pre-normed causal attention with
//!   rotary embeddings, G = pre-normed FFN, a seeded scatter after each) transform it; the
//!   two halves are averaged back to width `w` before the final norm and the head. Training by
//!   memory-free backprop ([`jinn_nn::reversible::Engine`] in `Mode::Reconstruct`) or plain
//!   autodiff ([`Backprop::Standard`]).
//! - **Standard** ([`Arch::Standard`]): a pre-norm transformer of width `w`,
//!   `h += Attn(LN h); h += FFN(LN h)`, built from the same sub-networks
//!   ([`jinn_nn::reversible::causal_subnets`]), so both have the same parameter count.

use burn::module::Module;
use burn::nn::{Embedding, LayerNorm, Linear};
use burn::optim::GradientsParams;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Distribution, Int, Tensor};
use jinn_nn::init;
use jinn_nn::ops::{layer_norm, linear_rows};
use jinn_nn::reversible::{
    accumulate, backprop_into, causal_subnets, forward_standard, Block, Engine, Ffn, ReversibleBlock,
    ReversibleCausalBlock, ReversibleCausalConfig, SelfAttention, SubNet,
};
use jinn_train::{Result, TrainError};

use super::config::{Arch, Backprop, LmModelConfig};

/// One standard pre-norm transformer block: `h = x + Attn(LN x)`, `y = h + FFN(LN h)`.
#[derive(Module, Debug)]
pub struct StandardBlock {
    /// Pre-normed causal self-attention.
    pub attn: SelfAttention,
    /// Pre-normed feed-forward network.
    pub ffn: Ffn,
}

impl Block<3> for StandardBlock {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = x.clone() + self.attn.apply(x); // [b, s, w]
        h.clone() + self.ffn.apply(h)
    }
}

/// A causal language model (see the module docs).
#[derive(Module, Debug)]
pub struct LanguageModel {
    /// Token embedding `vocab → w`.
    pub embed: Embedding,
    /// Reversible blocks on the `2w` stream (RSF-LM; empty for the standard LM).
    pub rsf: Vec<ReversibleCausalBlock>,
    /// Standard blocks on the `w` stream (standard LM; empty for the RSF-LM).
    pub standard: Vec<StandardBlock>,
    /// Final LayerNorm over `w`.
    pub norm: LayerNorm,
    /// Output head `w → vocab`.
    pub head: Linear,
    /// Longest sequence the rotary tables cover.
    pub max_seq: usize,
}

/// NnError (a bad block configuration) as a config error on `model`.
fn model_err(e: jinn_nn::NnError) -> TrainError {
    TrainError::config("model", e.to_string())
}

impl LmModelConfig {
    /// Builds the model for `vocab_size` tokens on `device`, its random initialisation drawn
    /// from `seed` (parameters are lazy: they are drawn by a first forward pass, in order).
    pub fn init(&self, vocab_size: usize, seed: u64, device: &Device) -> Result<LanguageModel> {
        self.validate()?;
        if vocab_size == 0 {
            return Err(TrainError::config("vocab_size", "the tokenizer has no tokens"));
        }
        init::seeded_init(device, jinn_data::rng::derive_seed(seed, "lm-init", 0), || {
            self.build(vocab_size, seed, device)
        })
    }

    /// The model with lazy (not yet drawn) parameters.
    fn build(&self, vocab_size: usize, seed: u64, device: &Device) -> Result<LanguageModel> {
        let w = self.d_model;
        let rotary = Some(self.max_seq);
        let (rsf, standard) = match self.arch {
            Arch::Rsf => {
                let cfg = ReversibleCausalConfig::new(2 * w, self.d_ffn, self.num_heads)
                    .with_seed(seed)
                    .with_rotary_max_seq(rotary);
                (cfg.init_stack(self.depth, device).map_err(model_err)?, Vec::new())
            }
            Arch::Standard => {
                let blocks = (0..self.depth)
                    .map(|_| {
                        let (attn, ffn) =
                            causal_subnets(w, self.d_ffn, self.num_heads, rotary, self.depth, device)?;
                        Ok(StandardBlock { attn, ffn })
                    })
                    .collect::<std::result::Result<Vec<_>, jinn_nn::NnError>>()
                    .map_err(model_err)?;
                (Vec::new(), blocks)
            }
        };
        Ok(LanguageModel {
            // N(0, 1), Burn's embedding default, drawn on the host like every parameter.
            embed: Embedding {
                weight: init::lazy_param([vocab_size, w], device, move |d| {
                    init::host_random([vocab_size, w], Distribution::Normal(0.0, 1.0), d)
                }),
            },
            rsf,
            standard,
            norm: init::layer_norm(w, device),
            head: init::linear(w, vocab_size, device),
            max_seq: self.max_seq,
        })
    }
}

impl LanguageModel {
    /// The architecture.
    pub fn arch(&self) -> Arch {
        if self.rsf.is_empty() && !self.standard.is_empty() {
            Arch::Standard
        } else {
            Arch::Rsf
        }
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.embed.weight.dims()[0]
    }

    /// The device of the parameters.
    pub fn device(&self) -> Device {
        self.embed.weight.val().device()
    }

    /// The stack's input for `tokens` `[b, s]`: `[b, s, 2w]` (RSF) or `[b, s, w]` (standard).
    pub(crate) fn stem(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let e = self.embed.forward(tokens); // [b, s, w]
        match self.arch() {
            Arch::Rsf => Tensor::cat(vec![e.clone(), e], 2), // [b, s, 2w]
            Arch::Standard => e,
        }
    }

    /// Logits `[b, s, vocab]` from the stack's output (averaging the RSF stream's halves).
    pub(crate) fn readout(&self, y: Tensor<3>) -> Tensor<3> {
        let y = match self.arch() {
            Arch::Rsf => {
                let w = y.dims()[2] / 2;
                (y.clone().narrow(2, 0, w) + y.narrow(2, w, w)) * 0.5 // [b, s, w]
            }
            Arch::Standard => y,
        };
        linear_rows(&self.head, layer_norm(&self.norm, y)) // [b, s, vocab]
    }

    /// Logits `[b, s, vocab]` for `tokens` `[b, s]` (`s ≤ max_seq`), plain autodiff through
    /// every block.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let h = self.stem(tokens);
        let y = match self.arch() {
            Arch::Rsf => forward_standard(&self.rsf, h),
            Arch::Standard => forward_standard(&self.standard, h),
        };
        self.readout(y)
    }

    /// Relative reconstruction error `‖inverse(forward(x)) − x‖ / ‖x‖` of the reversible stack
    /// on the embedded `tokens` `[b, s]` (the quantity memory-free backprop relies on); `None`
    /// for the standard LM.
    pub fn reconstruction_error(&self, tokens: Tensor<2, Int>) -> Option<f64> {
        if self.arch() != Arch::Rsf {
            return None;
        }
        let x = self.stem(tokens); // [b, s, 2w]
        let y = forward_standard(&self.rsf, x.clone());
        let back = self.rsf.iter().rev().fold(y, |h, block| ReversibleBlock::inverse(block, h));
        let diff: f64 = (back - x.clone()).square().sum().sqrt().into_scalar();
        let norm: f64 = x.square().sum().sqrt().into_scalar();
        Some(diff / norm)
    }

    /// Mean next-token loss (nats) of `logits` `[b, s, vocab]` against `targets` `[b, s]`.
    pub fn loss(logits: Tensor<3>, targets: Tensor<2, Int>) -> Tensor<1> {
        let [b, s, v] = logits.dims();
        let logp = log_softmax(logits.reshape([b * s, v]), 1); // [b·s, vocab]
        logp.gather(1, targets.reshape([b * s, 1])).mean().neg() // [1]
    }

    /// One forward and backward on an autodiff device: the mean loss (nats per token) and the
    /// gradients of `loss / divisor` w.r.t. every parameter. With `engine` (RSF only) the
    /// stack is run by the memory-free engine; otherwise by plain autodiff.
    pub fn forward_backward(
        &self,
        tokens: Tensor<2, Int>,
        targets: Tensor<2, Int>,
        divisor: f64,
        engine: Option<&mut Engine>,
    ) -> Result<(f64, GradientsParams)> {
        let engine = match (engine, self.arch()) {
            (Some(e), Arch::Rsf) => e,
            _ => {
                let loss = Self::loss(self.forward(tokens), targets);
                let value = loss.clone().into_scalar::<f32>() as f64;
                let grads = GradientsParams::from_grads(loss.div_scalar(divisor).backward(), self);
                return Ok((value, grads));
            }
        };
        let engine_err =
            |e: jinn_nn::reversible::EngineError| TrainError::config("model.backprop", e.to_string());
        let h = self.stem(tokens); // [b, s, 2w], on the tape
        let (y, tape) = engine.forward(&self.rsf, h.clone()).map_err(engine_err)?; // y: fresh leaf
        let loss = Self::loss(self.readout(y.clone()), targets);
        let value = loss.clone().into_scalar::<f32>() as f64;
        let mut g = loss.div_scalar(divisor).backward();
        let grad_y = y.grad_remove(&mut g).unwrap_or_else(|| Tensor::zeros(y.dims(), &y.device()).inner());
        let mut grads = GradientsParams::new();
        accumulate(&mut grads, self, &mut g);
        let grad_h = engine.backward(&self.rsf, tape, grad_y, &mut grads).map_err(engine_err)?;
        let mut g = backprop_into(h, grad_h);
        accumulate(&mut grads, self, &mut g);
        Ok((value, grads))
    }
}

impl Backprop {
    /// The engine this setting trains an `arch` model with (`None`: plain autodiff).
    pub fn engine(self, arch: Arch) -> Option<Engine> {
        use jinn_nn::reversible::{Mode, MonitorConfig};
        (arch == Arch::Rsf && self == Backprop::Reconstruct)
            .then(|| Engine::new(Mode::Reconstruct, MonitorConfig::default()))
    }
}
