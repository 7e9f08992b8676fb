//! KV-cached incremental decoding and sampling.
//!
//! Every attention layer keeps the keys and values of the positions seen so far
//! ([`jinn_nn::reversible::KvCache`]); a call runs only the new tokens through the stack. In an
//! RSF block only F (attention) looks across positions, so the cache holds F's keys/values
//! of the half-stream it reads; G and the scatter act per position.

use burn::tensor::{Int, Tensor, TensorData};
use jinn_nn::reversible::{KvCache, ReversibleCausalBlock, SubNet};
use rand::Rng;

use super::config::Arch;
use super::error::LmError;
use super::model::{LanguageModel, StandardBlock};

/// The decoding state of one batch of sequences: one [`KvCache`] per block.
#[derive(Debug, Clone)]
pub struct LmCache {
    layers: Vec<KvCache>,
}

impl LmCache {
    /// Positions cached so far.
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, KvCache::len)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One reversible block on new positions `x` `[b, new, 2w]`: `y1 = x1 + F(x2)` (F attends
/// over the cache), `y2 = x2 + G(y1)`, scatter.
fn rsf_block_cached(block: &ReversibleCausalBlock, x: Tensor<3>, cache: &mut KvCache) -> Tensor<3> {
    let w = x.dims()[2] / 2;
    let (x1, x2) = (x.clone().narrow(2, 0, w), x.narrow(2, w, w)); // [b, new, w] each
    let y1 = x1 + block.f.apply_cached(x2.clone(), cache);
    let y2 = x2 + block.g.apply(y1.clone());
    block.scatter.forward(Tensor::cat(vec![y1, y2], 2)) // [b, new, 2w]
}

/// One standard block on new positions `x` `[b, new, w]`.
fn standard_block_cached(block: &StandardBlock, x: Tensor<3>, cache: &mut KvCache) -> Tensor<3> {
    let h = x.clone() + block.attn.apply_cached(x, cache);
    h.clone() + block.ffn.apply(h)
}

impl LanguageModel {
    /// An empty decoding cache.
    pub fn new_cache(&self) -> LmCache {
        LmCache { layers: vec![KvCache::new(); self.rsf.len() + self.standard.len()] }
    }

    /// Logits `[b, new, vocab]` for the next tokens `tokens` `[b, new]` after those in
    /// `cache` (which grows by `new`). Equal to [`LanguageModel::forward`] on the whole
    /// sequence, restricted to the new positions.
    pub fn forward_cached(&self, tokens: Tensor<2, Int>, cache: &mut LmCache) -> Result<Tensor<3>, LmError> {
        let total = cache.len() + tokens.dims()[1];
        if total > self.max_seq {
            return Err(LmError::TooLong { what: "the sequence", len: total, max: self.max_seq });
        }
        let mut h = self.stem(tokens);
        match self.arch() {
            Arch::Rsf => {
                for (block, c) in self.rsf.iter().zip(&mut cache.layers) {
                    h = rsf_block_cached(block, h, c);
                }
            }
            Arch::Standard => {
                for (block, c) in self.standard.iter().zip(&mut cache.layers) {
                    h = standard_block_cached(block, h, c);
                }
            }
        }
        Ok(self.readout(h))
    }
}

/// How the next token is drawn from the logits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Softmax temperature (`0` = greedy, always the most likely token).
    pub temperature: f64,
    /// Keep only the `top_k` most likely tokens (`0` = all).
    pub top_k: usize,
}

impl Sampling {
    /// Check the settings.
    pub fn validate(&self) -> Result<(), LmError> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(LmError::Sampling {
                field: "temperature",
                reason: format!("must be a finite number ≥ 0, got {}", self.temperature),
            });
        }
        Ok(())
    }

    /// Draws a token id from `logits` (one row, host floats) with `rng`.
    pub fn sample(&self, logits: &[f32], rng: &mut impl Rng) -> usize {
        let argmax =
            |xs: &[f32]| xs.iter().enumerate().fold(0, |best, (i, &v)| if v > xs[best] { i } else { best });
        if self.temperature == 0.0 {
            return argmax(logits);
        }
        let mut order: Vec<usize> = (0..logits.len()).collect();
        if self.top_k > 0 && self.top_k < logits.len() {
            order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
            order.truncate(self.top_k);
        }
        let max = order.iter().map(|&i| logits[i]).fold(f32::NEG_INFINITY, f32::max) as f64;
        let weights: Vec<f64> =
            order.iter().map(|&i| ((logits[i] as f64 - max) / self.temperature).exp()).collect();
        let total: f64 = weights.iter().sum();
        let mut u = rng.random::<f64>() * total;
        for (&i, &w) in order.iter().zip(&weights) {
            if u < w {
                return i;
            }
            u -= w;
        }
        order[order.len() - 1]
    }
}

/// The last position's logits of `logits` `[1, new, vocab]` as host floats.
pub fn last_logits(logits: Tensor<3>) -> Vec<f32> {
    let [_, n, v] = logits.dims();
    logits.narrow(1, n - 1, 1).reshape([v]).try_into_vec_as::<f32>().unwrap_or_default()
}

/// `ids` as a `[1, len]` token tensor on the model's device.
pub fn token_row(model: &LanguageModel, ids: &[u32]) -> Tensor<2, Int> {
    let data = TensorData::new(ids.iter().map(|&t| t as i64).collect::<Vec<_>>(), [1, ids.len()]);
    Tensor::from_data(data, &model.device())
}

/// Generates up to `max_tokens` token ids after `prompt` (one sequence), calling `on_token`
/// with each new id as soon as it is drawn (return `false` to stop early). Prompt and output
/// must fit in the context.
pub fn generate(
    model: &LanguageModel,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    rng: &mut impl Rng,
    mut on_token: impl FnMut(u32) -> bool,
) -> Result<Vec<u32>, LmError> {
    sampling.validate()?;
    if prompt.is_empty() {
        return Err(LmError::EmptyPrompt);
    }
    if prompt.len() > model.max_seq {
        return Err(LmError::TooLong { what: "the prompt", len: prompt.len(), max: model.max_seq });
    }
    if prompt.len() + max_tokens > model.max_seq {
        return Err(LmError::TooLong {
            what: "prompt plus --max-tokens",
            len: prompt.len() + max_tokens,
            max: model.max_seq,
        });
    }
    let mut cache = model.new_cache();
    let mut logits = model.forward_cached(token_row(model, prompt), &mut cache)?;
    let mut out = Vec::with_capacity(max_tokens);
    for _ in 0..max_tokens {
        let next = sampling.sample(&last_logits(logits), rng) as u32;
        out.push(next);
        if !on_token(next) || out.len() == max_tokens {
            break;
        }
        logits = model.forward_cached(token_row(model, &[next]), &mut cache)?;
    }
    Ok(out)
}
