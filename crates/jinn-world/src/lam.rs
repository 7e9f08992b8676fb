//! The latent action model (Jasmine's `LatentActionModel` in `jasmine/models/lam.py`; loss and
//! dead-code reset of `jasmine/baselines/train_lam.py`).
//!
//! `videos` `[B, T, H, W, C]` in `[0, 1]` → patchify `[B, T, N, P]` → a learned action token
//! prepended as spatial slot 0 of every frame `[B, T, N+1, P]` → axial encoder (spatial full,
//! temporal causal; with `encoder_frame_difference` each patch also carries its change from
//! the previous frame, `[B, T, N+1, 2P]`) → the slot-0 outputs `[B, T, 1, L]` (the last block
//! runs for slot 0 alone, [`jinn_nn::AxialTransformer::forward_at_slot`]); those of frames
//! `1..T−1` are the latent actions `[B, T−1, L]` (frame `t`'s action is computed from frames
//! `0..t`) → vector quantiser (6 codes by default) → decoder: `patch_up(patches of frames 0..T−2) + action_up(z_q)`
//! `[B, T−1, N, M]` → axial transformer (spatial full, temporal causal) → sigmoid (with
//! `decoder_residual`: added to the logits of frame `t−1` first) → unpatchify: a prediction of
//! frames `1..T−1`.
//!
//! Loss: `MSE(recon, videos[:, 1..]) + q_loss + β·commitment`; with hindsight code assignment
//! (`code_assignment = "reconstruction"`, [`CodeAssignment`], in `lam/assignment.rs`) training
//! feeds the decoder the code whose prediction is best and the loss is `MSE + cross-entropy` of
//! the encoder naming that code. The dead-code reset lives in
//! the training task ([`crate::lam::task`]) because it runs after the optimiser update.
//!
//! Inside a Genie model only the encoder side is needed: [`LamConfig::init_encoder`] builds the
//! model without its decoder (`patch_up`, `action_up` and the decoder transformer).

pub mod task;

use crate::streams::clip_rngs;
use crate::tokenizer::coder::CoderConfig;
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Device, Distribution, Int, Tensor};
use jinn_data::rng::SampleStreams;
use jinn_nn::init::{host_random, lazy_param, linear, zero_linear};
use jinn_nn::ops::{linear_rows, mean_squared_error, sigmoid};
use jinn_nn::{
    patchify, unpatchify, AxialTransformer, NnError, PatchGrid, ResetTarget, VectorQuantizer,
    VectorQuantizerConfig, VqOutput,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Architecture of a [`Lam`] (the `model` section of a LAM run config). Defaults are
/// Jasmine's (`train_lam.py`'s `Args`): 64×64×3 frames, patch 16, width 512, FFN 2048, 8 heads,
/// 4 + 4 blocks, 6 codes of dimension 32, no codebook dropout, β 0.25, reset after 50 unused steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", default)]
pub struct LamConfig {
    /// Frames and the encoder/decoder shapes (flattened into the section); its `latent_dim`
    /// is the latent action dimension `L`.
    #[serde(flatten)]
    pub coder: CoderConfig,
    /// Number of latent action codes `K`.
    pub num_codes: usize,
    /// Codebook dropout rate in training, in `[0, 1)` (Jasmine: 0).
    pub codebook_dropout: f64,
    /// Commitment weight β.
    pub vq_beta: f64,
    /// A code unused for this many consecutive steps is reset (Jasmine `vq_reset_thresh`).
    pub reset_threshold: u32,
    /// Where a reset code goes: `encoder_output` (default: onto a random transition's
    /// encoder output) or `used_code` (Jasmine: a copy of a used code; see [`ResetTarget`]).
    pub reset_to: ResetTarget,
    /// Feed the encoder each patch together with its change from the previous frame
    /// (`[x_t, x_t − x_{t−1}]`, `2P` wide; zero change for frame 0) instead of the patch alone
    /// (Jasmine: `false`).
    pub encoder_frame_difference: bool,
    /// Predict each frame as a change of the previous one (Jasmine: `false`):
    /// `sigmoid(logit(x_{t−1}) + out)` with the decoder's output layer starting at zero, so
    /// the untrained decoder copies the previous frame and its capacity goes to what moves.
    pub decoder_residual: bool,
    /// How a training transition's code is chosen: `nearest` (the code nearest the encoder
    /// output, VQ-VAE as in Jasmine) or `reconstruction` (the code whose decoder prediction of
    /// the transition is best; see [`CodeAssignment`]; needs `codebook_dropout` 0).
    pub code_assignment: CodeAssignment,
}

/// How a training transition's latent code is chosen ([`LamConfig::code_assignment`]) when the
/// LAM trains with its decoder (`jinn train lam`; a LAM co-trained inside Genie has no decoder
/// and learns through the dynamics loss on its nearest codes). Inference always names the code
/// nearest the encoder output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeAssignment {
    /// The code nearest (cosine) the encoder output, with the straight-through estimator and
    /// the codebook and commitment losses (VQ-VAE; Jasmine).
    #[default]
    Nearest,
    /// Hindsight assignment (not in Jasmine; "multiple-choice learning"): the decoder predicts
    /// every transition once per code (without gradients) and the transition takes the code
    /// whose prediction has the least squared error (in the pass for code `k` every transition of
    /// the clip takes code `k`, so the decoder's causal temporal attention sees code `k` on the
    /// earlier transitions too). The decoder trains on that code's vector,
    /// so each code becomes the input that best explains its transitions; the encoder learns to
    /// name it by cross-entropy over its cosine similarities to the codes
    /// ([`ASSIGNMENT_TEMPERATURE`]), which replaces the codebook and commitment
    /// losses. A code is thus chosen by what it does to the prediction, not by where the encoder
    /// outputs happen to cluster.
    Reconstruction,
}

impl Default for LamConfig {
    fn default() -> Self {
        LamConfig {
            coder: CoderConfig::default(),
            num_codes: 6,
            codebook_dropout: 0.0,
            vq_beta: jinn_nn::VQ_BETA,
            reset_threshold: 50,
            reset_to: ResetTarget::default(),
            encoder_frame_difference: false,
            decoder_residual: false,
            code_assignment: CodeAssignment::Nearest,
        }
    }
}

// `#[serde(remote = "Self")]` derives these as inherent functions; the trait impls add the
// unknown-key check that `deny_unknown_fields` cannot do for a struct with a flattened part.
impl Serialize for LamConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LamConfig::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for LamConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let fields = serde_json::Map::deserialize(deserializer)?;
        jinn_train::config::known_fields_only::<LamConfig>(&fields, "LAM").map_err(D::Error::custom)?;
        LamConfig::deserialize(serde_json::Value::Object(fields)).map_err(D::Error::custom)
    }
}

impl LamConfig {
    /// The patch grid of this config's frames.
    pub fn grid(&self) -> Result<PatchGrid, NnError> {
        self.coder.grid()
    }

    /// Build the whole LAM, decoder included (flax NNX's default initialisers, drawn lazily).
    pub fn init(&self, device: &Device) -> Result<Lam, NnError> {
        let grid = self.grid()?;
        let mut lam = self.init_encoder(device)?;
        let c = &self.coder;
        let mut transformer = c.axial(c.model_dim, grid.patch_dim(), c.decoder_blocks, device)?;
        if self.decoder_residual {
            transformer.proj_out = zero_linear(c.model_dim, grid.patch_dim(), device);
        }
        lam.decoder = Some(LamDecoder {
            patch_up: linear(grid.patch_dim(), c.model_dim, device),
            action_up: linear(c.latent_dim, c.model_dim, device),
            transformer,
        });
        Ok(lam)
    }

    /// Build the encoder side only (action token, encoder, quantiser), as kept inside Genie.
    pub fn init_encoder(&self, device: &Device) -> Result<Lam, NnError> {
        let grid = self.grid()?;
        if !(self.vq_beta.is_finite() && self.vq_beta >= 0.0) {
            return Err(NnError::InvalidConfig {
                field: "vq_beta",
                reason: format!("must be ≥ 0, got {}", self.vq_beta),
            });
        }
        if self.code_assignment == CodeAssignment::Reconstruction && self.codebook_dropout > 0.0 {
            return Err(NnError::InvalidConfig {
                field: "codebook_dropout",
                reason: format!(
                    "must be 0 with code_assignment = \"reconstruction\" (hindsight assignment drops no \
                     codes), got {}",
                    self.codebook_dropout
                ),
            });
        }
        let c = &self.coder;
        let p = grid.patch_dim() * if self.encoder_frame_difference { 2 } else { 1 };
        // LeCun uniform with fan_in 1: U(−√3, √3) per element (flax's init of Jasmine's `action_in`).
        let bound = 3f64.sqrt();
        let action_in = lazy_param([p], device, move |dev| {
            host_random([p], Distribution::Uniform(-bound, bound), dev) // [p]
        });
        Ok(Lam {
            action_in,
            encoder: c.axial(p, c.latent_dim, c.encoder_blocks, device)?,
            vq: VectorQuantizerConfig::new(self.num_codes, c.latent_dim)
                .with_dropout(self.codebook_dropout)
                .init(device)?,
            decoder: None,
            patch: c.patch,
            height: c.height,
            width: c.width,
            channels: c.channels,
            vq_beta: self.vq_beta,
            encoder_frame_difference: self.encoder_frame_difference,
            decoder_residual: self.decoder_residual,
            assign_by_reconstruction: self.code_assignment == CodeAssignment::Reconstruction,
        })
    }
}

/// The LAM decoder: predicts frame `t` from frames `< t` and the latent actions.
#[derive(Module, Debug)]
pub struct LamDecoder {
    /// Patches `P → M`.
    pub patch_up: Linear,
    /// Latent actions `L → M`.
    pub action_up: Linear,
    /// Axial transformer `M → P`.
    pub transformer: AxialTransformer,
}

/// The latent action model (see the module docs).
#[derive(Module, Debug)]
pub struct Lam {
    /// The learned action token `[P]`, spatial slot 0 of every frame.
    pub action_in: Param<Tensor<1>>,
    /// Patches (+ action slot) `P` → latents `L`.
    pub encoder: AxialTransformer,
    /// The latent action codebook.
    pub vq: VectorQuantizer,
    /// The decoder (absent inside Genie).
    pub decoder: Option<LamDecoder>,
    /// Patch side.
    pub patch: usize,
    /// Frame rows.
    pub height: usize,
    /// Frame columns.
    pub width: usize,
    /// Frame channels.
    pub channels: usize,
    /// Commitment weight β.
    pub vq_beta: f64,
    /// Whether the encoder also sees each patch's change from the previous frame.
    pub encoder_frame_difference: bool,
    /// Whether the decoder predicts each frame as a change of the previous one.
    pub decoder_residual: bool,
    /// Whether training assigns codes by reconstruction ([`CodeAssignment::Reconstruction`]).
    pub assign_by_reconstruction: bool,
}

/// The result of [`Lam::forward_train`].
#[derive(Debug, Clone)]
pub struct LamOutput {
    /// Predicted frames `1..T−1` `[B, T−1, H, W, C]` in `[0, 1]`.
    pub recon: Tensor<5>,
    /// Latent action indices `[B·(T−1)]`.
    pub indices: Tensor<1, Int>,
    /// Normalised encoder outputs `[B·(T−1), L]` (where dead codes are reset to).
    pub emb: Tensor<2>,
    /// Total loss `mse + q_loss + β·commitment` `[1]`.
    pub loss: Tensor<1>,
    /// Mean squared error against frames `1..T−1` `[1]`.
    pub mse: Tensor<1>,
    /// Codebook loss `[1]`; with [`CodeAssignment::Reconstruction`] in training, the encoder's
    /// cross-entropy against the assigned codes.
    pub q_loss: Tensor<1>,
    /// Commitment loss `[1]` (0 with [`CodeAssignment::Reconstruction`] in training).
    pub commitment: Tensor<1>,
    /// With [`CodeAssignment::Reconstruction`], the hindsight codes `[B·(T−1)]` (the best
    /// prediction's); in training these are `indices`, in evaluation `indices` are the
    /// encoder's (nearest) codes and these show how often it names the hindsight one.
    pub hindsight: Option<Tensor<1, Int>>,
}

impl Lam {
    /// The patch grid of the frames this LAM was built for.
    pub fn grid(&self) -> PatchGrid {
        PatchGrid { patch: self.patch, height: self.height, width: self.width, channels: self.channels }
    }

    /// Number of latent action codes `K`.
    pub fn num_codes(&self) -> usize {
        self.vq.num_codes()
    }

    /// Latent action dimension `L`.
    pub fn latent_dim(&self) -> usize {
        self.vq.codebook.shape().dims::<2>()[1]
    }

    /// The model without its decoder (what Genie keeps).
    pub fn without_decoder(self) -> Self {
        Lam { decoder: None, ..self }
    }

    fn check_frames(&self, dims: [usize; 5]) -> Result<(), NnError> {
        let [_, t, h, w, c] = dims;
        if [h, w, c] != [self.height, self.width, self.channels] {
            return Err(NnError::Shape {
                what: "videos [B, T, H, W, C]",
                expected: format!("H×W×C = {}×{}×{}", self.height, self.width, self.channels),
                got: format!("{h}×{w}×{c}"),
            });
        }
        if t < 2 {
            return Err(NnError::Shape {
                what: "videos [B, T, H, W, C]",
                expected: "T ≥ 2 frames (an action is a transition)".into(),
                got: format!("T = {t}"),
            });
        }
        Ok(())
    }

    /// Encoder + quantiser on `videos` `[B, T, H, W, C]` in `[0, 1]`; `rng` enables codebook
    /// dropout. Returns the quantiser output over the `B·(T−1)` transitions, the patches
    /// `[B, T, N, P]` and `[B, T−1]`.
    pub fn vq_encode(
        &self,
        videos: Tensor<5>,
        streams: Option<&SampleStreams>,
    ) -> Result<(VqOutput, Tensor<4>, [usize; 2]), NnError> {
        self.check_frames(videos.dims())?;
        let patches = patchify(videos, self.patch)?; // [b, t, n, p]
        let [b, t, n, p] = patches.dims();
        let frames = if self.encoder_frame_difference {
            let previous = Tensor::cat(
                vec![
                    patches.clone().slice([0..b, 0..1, 0..n, 0..p]),
                    patches.clone().slice([0..b, 0..t - 1, 0..n, 0..p]),
                ],
                1,
            ); // [b, t, n, p], frame 0 paired with itself
            Tensor::cat(vec![patches.clone(), patches.clone() - previous], 3) // [b, t, n, 2p]
        } else {
            patches.clone()
        };
        let d = frames.dims()[3];
        let token = self.action_in.val().reshape([1, 1, 1, d]).repeat(&[b, t, 1, 1]); // [b, t, 1, d]
        let input = Tensor::cat(vec![token, frames], 2); // [b, t, n+1, d]

        // Only the action slot's outputs are read: the last block skips the patch tokens.
        let latents = self.encoder.forward_at_slot(input, 0); // [b, t, 1, l]
        let l = latents.dims()[3];
        let actions = latents.slice([0..b, 1..t, 0..1, 0..l]).reshape([b * (t - 1), l]); // [e, l]
        let out = match streams {
            Some(streams) => self.vq.forward_train(actions, &mut clip_rngs(streams, b)?)?,
            None => self.vq.forward(actions),
        };
        Ok((out, patches, [b, t - 1]))
    }

    /// Quantised latent actions `[B, T−1, L]` of `videos` (no dropout). The straight-through
    /// estimator passes gradients into the encoder (for co-training inside Genie).
    pub fn latent_actions(&self, videos: Tensor<5>) -> Result<Tensor<3>, NnError> {
        let (out, _, [b, tm1]) = self.vq_encode(videos, None)?;
        let l = out.z_q.dims()[1];
        Ok(out.z_q.reshape([b, tm1, l]))
    }

    /// Latent action indices `[B, T−1]` of `videos` (no dropout).
    pub fn action_indices(&self, videos: Tensor<5>) -> Result<Tensor<2, Int>, NnError> {
        let (out, _, dims) = self.vq_encode(videos, None)?;
        Ok(out.indices.reshape(dims))
    }

    /// Training forward with codebook dropout from `rng`: prediction of frames `1..T−1` and
    /// the loss of Jasmine's `train_lam.py`.
    pub fn forward_train(&self, videos: Tensor<5>, streams: &SampleStreams) -> Result<LamOutput, NnError> {
        self.forward_with(videos, Some(streams))
    }

    /// Like [`Lam::forward_train`] without codebook dropout (validation).
    pub fn forward_eval(&self, videos: Tensor<5>) -> Result<LamOutput, NnError> {
        self.forward_with(videos, None)
    }

    fn forward_with(&self, videos: Tensor<5>, streams: Option<&SampleStreams>) -> Result<LamOutput, NnError> {
        let decoder = self.decoder.as_ref().ok_or_else(|| NnError::InvalidConfig {
            field: "decoder",
            reason: "this LAM was built without its decoder (encoder side only)".into(),
        })?;
        let training = streams.is_some();
        let (out, patches, [b, tm1]) = self.vq_encode(videos.clone(), streams)?;
        let [_, t, n, p] = patches.dims();
        let l = out.z_q.dims()[1];
        let context = patches.clone().slice([0..b, 0..t - 1, 0..n, 0..p]); // [b, t−1, n, p]
        let frames_in = linear_rows(&decoder.patch_up, context.clone()); // [b, t−1, n, m]
                                                                         // The hindsight codes `[b·(t−1)]` (reconstruction assignment only).
        let hindsight = self.assign_by_reconstruction.then(|| {
            let target = patches.slice([0..b, 1..t, 0..n, 0..p]); // [b, t−1, n, p]
            self.best_codes(decoder, frames_in.clone(), context.clone(), target)
        });
        let (indices, action, q_loss, commitment) = if let (true, Some(best)) = (training, &hindsight) {
            let ce = assignment::cross_entropy(&self.vq, out.emb.clone(), best.clone());
            let zero = ce.zeros_like(); // [1], in the compute dtype
            (best.clone(), self.vq.codes(best.clone()), ce, zero) // action [b·(t−1), l]
        } else {
            let (q_loss, commitment) = (out.codebook_loss(), out.commitment_loss());
            (out.indices, out.z_q, q_loss, commitment)
        };
        let action = action.reshape([b, tm1, 1, l]); // [b, t−1, 1, l]
        let x = frames_in + linear_rows(&decoder.action_up, action); // [b, t−1, n, m]
        let pred = self.decode(decoder, x, context); // [b, t−1, n, p]
        let recon = unpatchify(pred, self.grid())?; // [b, t−1, h, w, c]
        let [_, _, h, w, c] = videos.dims();
        let target = videos.slice([0..b, 1..t, 0..h, 0..w, 0..c]); // [b, t−1, h, w, c]
        let mse = mean_squared_error(recon.clone(), target);
        let loss = mse.clone() + q_loss.clone() + commitment.clone() * self.vq_beta;
        Ok(LamOutput { recon, indices, emb: out.emb.detach(), loss, mse, q_loss, commitment, hindsight })
    }

    /// The decoder's transformer and output on its inputs `x` `[B', T−1, N, M]`: the predicted
    /// patches `[B', T−1, N, P]` of frames `1..T−1`, given the patches `context` of frames
    /// `0..T−2` (used by `decoder_residual`).
    fn decode(&self, decoder: &LamDecoder, x: Tensor<4>, context: Tensor<4>) -> Tensor<4> {
        let logits = decoder.transformer.forward(x); // [b', t−1, n, p]
        if self.decoder_residual {
            sigmoid(logit(context) + logits) // [b', t−1, n, p]
        } else {
            sigmoid(logits) // [b', t−1, n, p]
        }
    }
}

/// Pixel values kept away from 0 and 1 before [`logit`], so black and white stay finite.
const LOGIT_CLAMP: f64 = 1e-3;

/// `ln(x / (1 − x))` of pixel values in `[0, 1]`, clamped to `[LOGIT_CLAMP, 1 − LOGIT_CLAMP]`
/// first.
fn logit<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let x = x.clamp(LOGIT_CLAMP, 1.0 - LOGIT_CLAMP);
    (x.clone() / (x.neg() + 1.0)).log()
}

mod assignment;
pub use assignment::ASSIGNMENT_TEMPERATURE;
#[cfg(test)]
pub(crate) mod tests;
