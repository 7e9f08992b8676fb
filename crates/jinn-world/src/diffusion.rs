//! Diffusion-forcing dynamics on continuous MAE latents (Jasmine's `DynamicsDiffusion` in
//! `jasmine/models/dynamics.py`, loss of `train_dynamics_diffusion.py`).
//!
//! Training (diffusion forcing): every frame `(b, t)` gets its own integer noise level
//! `k ~ U{0..K−1}`, signal level `τ = k/K`, and is corrupted as `x_noisy = (1 − τ)·ε + τ·x`
//! with `ε ~ N(0, I)` (`τ = 0` is pure noise; `τ` never reaches 1). Each frame's spatial
//! sequence is `[action slot, level embedding, N noisy latents]` `[B, T, N+2, L]`; an axial
//! transformer (spatial full, temporal causal; `L → M → L`) predicts the clean latents from
//! slots `2..` (x-prediction). The loss is `mean_{b,t}((0.9·τ + 0.1)·mean_{n,l}(x̂ − x)²)`.
//!
//! `K` (`model.denoise_steps`) is part of the model: the level table has `K` rows, and the
//! sampler ([`crate::diffusion::sample`]) reads it from there.
//!
//! Deviation: the reference scales the noise by `1 − (1 − 1e−5)·τ`; jinn uses `1 − τ` (the two
//! differ by < 1e−5 since `τ < 1`). Noise and levels are drawn on the host from a generator
//! derived from `(seed, purpose, step)`, so a resumed run draws the same ones.

pub mod genie;
mod kind;
pub mod sample;
pub mod task;
mod world;

pub use kind::DIFFUSION_ENTRY;

use crate::dynamics::{action_slots, DynamicsConfig};
use crate::streams::clip_rngs;
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use jinn_data::rng::SampleStreams;
use jinn_nn::init::{host_random, lazy_param, linear};
use jinn_nn::{AxialTransformer, AxialTransformerConfig, NnError};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Diffusion's own settings (`kind = "diffusion"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiffusionConfig {
    /// The number of noise levels `K` (levels `k/K`, `k = 0..K−1`); the sampler denoises a
    /// frame in `K` steps. Stored with the model (Jasmine's `diffusion_denoise_steps`, which
    /// must be passed to training and sampling alike).
    pub denoise_steps: usize,
}

impl Default for DiffusionConfig {
    fn default() -> Self {
        DiffusionConfig { denoise_steps: 64 }
    }
}

impl DynamicsConfig {
    /// Build diffusion dynamics (`kind = "diffusion"`) over latents of width `latent_dim` with
    /// actions of width `action_dim`: level embedding `[K, L]` ~ N(0, 1/L), action projection
    /// `La → L`, transformer `L → M → L` (as Jasmine's `DynamicsDiffusion`).
    pub fn init_diffusion(
        &self,
        latent_dim: usize,
        action_dim: usize,
        device: &Device,
    ) -> Result<DiffusionDynamics, NnError> {
        let Some(diffusion) = self.diffusion() else {
            return Err(NnError::InvalidConfig {
                field: "kind",
                reason: format!(
                    "init_diffusion builds diffusion dynamics, the config says `{}`",
                    self.kind()
                ),
            });
        };
        if diffusion.denoise_steps == 0 {
            return Err(NnError::InvalidConfig { field: "denoise_steps", reason: "must be ≥ 1".into() });
        }
        if latent_dim == 0 || action_dim == 0 {
            return Err(NnError::InvalidConfig {
                field: "latent_dim/action_dim",
                reason: "must be positive".into(),
            });
        }
        let (k, l) = (diffusion.denoise_steps, latent_dim);
        let std = 1.0 / (l as f64).sqrt();
        Ok(DiffusionDynamics {
            level_embed: lazy_param([k, l], device, move |d| {
                host_random([k, l], Distribution::Normal(0.0, std), d)
            }),
            action_up: linear(action_dim, l, device),
            transformer: AxialTransformerConfig::new(
                l,
                self.model_dim,
                self.ffn_dim,
                l,
                self.num_blocks,
                self.num_heads,
            )
            .with_spatial_causal(false)
            .with_temporal_causal(true)
            .init(device)?,
        })
    }
}

/// The diffusion dynamics network (see the module docs).
#[derive(Module, Debug)]
pub struct DiffusionDynamics {
    /// Noise-level embedding `[K, L]`.
    pub level_embed: Param<Tensor<2>>,
    /// Action projection `La → L`.
    pub action_up: Linear,
    /// Axial transformer `L → M → L` over `[action, level, N latents]` slots.
    pub transformer: AxialTransformer,
}

/// The signal level `τ = k/K` of noise level `k` of `K`.
pub fn signal_level(k: usize, levels: usize) -> f64 {
    k as f64 / levels as f64
}

/// The loss weight `0.9·τ + 0.1` of a frame at signal level `τ` (cleaner frames count more).
pub fn loss_weight(tau: f64) -> f64 {
    0.9 * tau + 0.1
}

/// One standard normal draw by the Box–Muller transform (hand-written: the workspace's `rand`
/// 0.9 has no normal distribution, and `rand_distr` releases for it are not in the lock file).
pub fn standard_normal(rng: &mut dyn rand::RngCore) -> f32 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// `count` standard normal draws.
pub fn normal_vec(count: usize, rng: &mut dyn rand::RngCore) -> Vec<f32> {
    (0..count).map(|_| standard_normal(rng)).collect()
}

/// The diffusion-forcing corruption of one batch: a level per frame and the noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Corruption {
    /// Noise level `k` of every frame `[B·T]` (row-major), in `0..K`.
    pub levels: Vec<i64>,
    /// Noise `ε` `[B, T, N, L]` (row-major).
    pub noise: Vec<f32>,
}

/// Draw, for every clip from its own stream, levels `k ~ U{0..K−1}` per frame and then the
/// clip's noise.
pub fn draw_corruption(
    [b, t, n, l]: [usize; 4],
    levels: usize,
    streams: &SampleStreams,
) -> Result<Corruption, NnError> {
    let (mut ks, mut noise) = (Vec::with_capacity(b * t), Vec::with_capacity(b * t * n * l));
    for mut rng in clip_rngs(streams, b)? {
        ks.extend((0..t).map(|_| rng.random_range(0..levels) as i64));
        noise.extend(normal_vec(t * n * l, &mut rng));
    }
    Ok(Corruption { levels: ks, noise })
}

/// `x_noisy = (1 − τ)·ε + τ·x` for latents `x` `[B, T, N, L]`, per-frame signal levels
/// `tau` `[B, T]` and noise `[B, T, N, L]`.
pub fn corrupt(x: Tensor<4>, tau: Tensor<2>, noise: Tensor<4>) -> Tensor<4> {
    let [b, t, _, _] = x.dims();
    let tau = tau.reshape([b, t, 1, 1]); // [b, t, 1, 1]
    noise * (tau.clone().neg() + 1.0) + x * tau // [b, t, n, l]
}

/// The weighted loss and the plain MSE of predictions `x̂` against `x` (both `[B, T, N, L]`)
/// for frames at signal levels `tau` `[B, T]` (Jasmine's ramp weight): `mse_bt = mean_{n,l}(x̂ − x)²`,
/// `loss = mean_{b,t}((0.9·τ + 0.1)·mse_bt)`, `mse = mean_{b,t} mse_bt`.
pub fn diffusion_loss(pred: Tensor<4>, x: Tensor<4>, tau: Tensor<2>) -> (Tensor<1>, Tensor<1>) {
    let [b, t, n, l] = x.dims();
    let mse_bt = (pred - x).powi_scalar(2).reshape([b, t, n * l]).mean_dim(2).reshape([b, t]); // [b, t]
    let weight = tau.mul_scalar(0.9).add_scalar(0.1); // [b, t]
    ((mse_bt.clone() * weight).mean(), mse_bt.mean())
}

impl DiffusionDynamics {
    /// Number of noise levels `K`.
    pub fn levels(&self) -> usize {
        self.level_embed.shape().dims::<2>()[0]
    }

    /// Latent width `L`.
    pub fn latent_dim(&self) -> usize {
        self.level_embed.shape().dims::<2>()[1]
    }

    /// Action width `La`.
    pub fn action_dim(&self) -> usize {
        self.action_up.weight.shape().dims::<2>()[0]
    }

    /// The transformer input `[B, T, N+2, L]`: per frame `[action slot, level embedding,
    /// noisy latents]`, for `noisy` `[B, T, N, L]`, `levels` `[B, T]` and actions `[B, T−1, La]`.
    pub fn inputs(
        &self,
        noisy: Tensor<4>,
        levels: Tensor<2, Int>,
        actions: Tensor<3>,
    ) -> Result<Tensor<4>, NnError> {
        let [b, t, n, l] = noisy.dims();
        self.check_inputs([b, t, n, l], &levels, &actions)?;
        let level = self.level_embed.val().select(0, levels.reshape([b * t])).reshape([b, t, 1, l]); // [b, t, 1, l]
        let action = action_slots(&self.action_up, actions, [b, t, l]); // [b, t, 1, l]
        Ok(Tensor::cat(vec![action, level, noisy], 2)) // [b, t, n+2, l]
    }

    /// Clean-latent predictions `x̂` `[B, T, N, L]` (see [`DiffusionDynamics::inputs`]).
    pub fn predict(
        &self,
        noisy: Tensor<4>,
        levels: Tensor<2, Int>,
        actions: Tensor<3>,
    ) -> Result<Tensor<4>, NnError> {
        let [b, t, n, l] = noisy.dims();
        let out = self.transformer.forward(self.inputs(noisy, levels, actions)?); // [b, t, n+2, l]
        Ok(out.slice([0..b, 0..t, 2..n + 2, 0..l]))
    }

    /// Training forward on clean latents `x` `[B, T, N, L]` with `corruption`: predictions,
    /// the weighted loss, the plain MSE and the per-frame signal levels `[B, T]`.
    pub fn forward_train(
        &self,
        x: Tensor<4>,
        actions: Tensor<3>,
        corruption: &Corruption,
    ) -> Result<DiffusionOutput, NnError> {
        let [b, t, n, l] = x.dims();
        let device = x.device();
        if corruption.levels.len() != b * t || corruption.noise.len() != b * t * n * l {
            return Err(NnError::Shape {
                what: "corruption (levels [B·T], noise [B, T, N, L])",
                expected: format!("{} levels, {} noise values", b * t, b * t * n * l),
                got: format!("{} and {}", corruption.levels.len(), corruption.noise.len()),
            });
        }
        let k = self.levels();
        let taus: Vec<f32> =
            corruption.levels.iter().map(|&lv| signal_level(lv as usize, k) as f32).collect();
        let tau = Tensor::<2>::from_data(TensorData::new(taus, [b, t]), &device); // [b, t]
        let noise = Tensor::<4>::from_data(TensorData::new(corruption.noise.clone(), [b, t, n, l]), &device);
        let levels = Tensor::<2, Int>::from_data(TensorData::new(corruption.levels.clone(), [b, t]), &device);
        let noisy = corrupt(x.clone(), tau.clone(), noise);
        let pred = self.predict(noisy, levels, actions)?; // [b, t, n, l]
        let (loss, mse) = diffusion_loss(pred.clone(), x, tau.clone());
        Ok(DiffusionOutput { pred, loss, mse, tau })
    }

    fn check_inputs(
        &self,
        [b, t, n, l]: [usize; 4],
        levels: &Tensor<2, Int>,
        actions: &Tensor<3>,
    ) -> Result<(), NnError> {
        if l != self.latent_dim() || t == 0 || n == 0 {
            return Err(NnError::Shape {
                what: "latents [B, T, N, L]",
                expected: format!("L = {} and T, N ≥ 1", self.latent_dim()),
                got: format!("{:?}", [b, t, n, l]),
            });
        }
        if levels.dims() != [b, t] {
            return Err(NnError::Shape {
                what: "levels [B, T]",
                expected: format!("[{b}, {t}]"),
                got: format!("{:?}", levels.dims()),
            });
        }
        let want = [b, t - 1, self.action_dim()];
        if t > 1 && actions.dims() != want {
            return Err(NnError::Shape {
                what: "latent actions [B, T−1, La]",
                expected: format!("{want:?}"),
                got: format!("{:?}", actions.dims()),
            });
        }
        Ok(())
    }
}

/// The result of [`DiffusionDynamics::forward_train`].
#[derive(Debug, Clone)]
pub struct DiffusionOutput {
    /// Clean-latent predictions `[B, T, N, L]`.
    pub pred: Tensor<4>,
    /// Weighted loss `[1]`.
    pub loss: Tensor<1>,
    /// Unweighted MSE `[1]`.
    pub mse: Tensor<1>,
    /// Per-frame signal levels `[B, T]`.
    pub tau: Tensor<2>,
}

#[cfg(test)]
pub(crate) mod tests;
