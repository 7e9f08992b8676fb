//! Rollouts of [`DiffusionDynamics`] (after Jasmine's `GenieDiffusion.sample`, with a standard
//! update and a KV cache).
//!
//! Given the clean MAE latents of `C` context frames `[B, C, N, L]` and the actions of all
//! `S−1` transitions, [`sample_diffusion`] generates frames `C..S−1` one at a time:
//!
//! 1. **Context.** Every context frame is re-noised once to the fixed signal level
//!    `τ_c = k_c/K`, `k_c = round((1 − c_f)·K)` (at most `K−1`; `c_f` =
//!    [`SamplerConfig::context_noise`], 0.1 → `k_c` = 58 of 64), `x = τ_c·z + (1 − τ_c)·ε`,
//!    and fed with the level embedding of `k_c`. A generated frame joins the context the same
//!    way once it is final.
//! 2. **Denoising a frame** over the model's `K` levels, starting from pure noise `x_0 = ε`
//!    (`τ = 0`). At step `k = 0..K−1` the model predicts the clean latents `x̂` from `x` labelled
//!    with level `k` (`τ = k/K`); the update moves `x` to the next level `τ' = (k+1)/K` along
//!    the straight line the interpolation `x_τ = (1 − τ)·ε + τ·x` defines:
//!    `x ← x + (τ' − τ)/(1 − τ) · (x̂ − x)`. This is the Euler step of the flow
//!    `dx/dτ = (x̂ − x)/(1 − τ)`, and equals the deterministic DDIM step "estimate
//!    `ε̂ = (x − τ·x̂)/(1 − τ)`, then set `x = (1 − τ')·ε̂ + τ'·x̂`". The last step (`τ' = 1`)
//!    returns `x̂` itself: the frame's latents are the final clean prediction.
//! 3. **Decoding** is left to the caller (the MAE decoder over all `S` frames).
//!
//! Differences from the reference sampler (deliberate):
//! * the reference replaces the current frame by `x̂` after every step and feeds that clean
//!   estimate back labelled with level `d` (never re-noised); jinn feeds the model inputs that
//!   are actually at the level they are labelled with (the update above);
//! * the reference labels its corrupted context frames with level `K−1` though they are at
//!   `τ_c`; jinn labels them with `k_c`, the level they are at;
//! * the reference draws fresh context noise at every step; jinn draws it once per frame, so
//!   the context frames' keys and values never change and are cached;
//! * the number of steps is the model's `K` (stored in the checkpoint); asking for another
//!   number is an error rather than a silent mismatch.
//!
//! With [`SamplerConfig::use_cache`] the transformer runs only on the frame being denoised,
//! against an [`AxialKvCache`] of the (noised) earlier frames; without it every step recomputes
//! frames `0..=f`. Both give the same latents (tests). Noise comes from a ChaCha generator
//! seeded by [`SamplerConfig::seed`], so rollouts are reproducible.

use crate::diffusion::{normal_vec, signal_level, DiffusionDynamics};
use crate::sample::SamplerConfig;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_nn::ops::{self, linear_rows};
use jinn_nn::warm_pool::WarmPool;
use jinn_nn::{stem_rows, AxialKvCache, NnError};
use rand_chacha::ChaCha8Rng;

/// The context level `k_c = min(round((1 − c_f)·K), K − 1)` for corruption `c_f` of `K` levels.
pub fn context_level(context_noise: f64, levels: usize) -> usize {
    (((1.0 - context_noise) * levels as f64).round() as usize).min(levels - 1)
}

/// One denoising update from signal level `τ = k/K` to `τ' = (k+1)/K`:
/// `x + (τ' − τ)/(1 − τ)·(x̂ − x)` for the current latents `x` and the prediction `x̂`.
pub fn denoise_step(x: Tensor<3>, pred: Tensor<3>, k: usize, levels: usize) -> Tensor<3> {
    let (tau, next) = (signal_level(k, levels), signal_level(k + 1, levels));
    let rate = (next - tau) / (1.0 - tau);
    x.clone() + (pred - x).mul_scalar(rate)
}

/// Generates the latents of frames `C..frames−1` after the clean context latents
/// `[B, C, N, L]` under `actions` `[B, frames−1, La]` (row `t−1` drives the transition into
/// frame `t`); returns all frames' clean latents `[B, frames, N, L]` (the context unchanged).
pub fn sample_diffusion(
    dynamics: &DiffusionDynamics,
    context: Tensor<4>,
    actions: Tensor<3>,
    frames: usize,
    cfg: &SamplerConfig,
) -> Result<Tensor<4>, NnError> {
    let [b, c, n, l] = context.dims();
    let k_levels = dynamics.levels();
    let la = dynamics.action_dim();
    if c == 0 || frames <= c {
        return Err(NnError::InvalidConfig {
            field: "frames",
            reason: format!("need at least one context frame and frames > context; got {c} and {frames}"),
        });
    }
    if l != dynamics.latent_dim() {
        return Err(NnError::Shape {
            what: "context latents [B, C, N, L]",
            expected: format!("L = {}", dynamics.latent_dim()),
            got: format!("{:?}", context.dims()),
        });
    }
    if actions.dims() != [b, frames - 1, la] {
        return Err(NnError::Shape {
            what: "actions [B, frames−1, La]",
            expected: format!("[{b}, {}, {la}]", frames - 1),
            got: format!("{:?}", actions.dims()),
        });
    }
    if let Some(steps) = cfg.denoise_steps {
        if steps != k_levels {
            return Err(NnError::InvalidConfig {
                field: "denoise_steps",
                reason: format!(
                    "the model was trained with K = {k_levels} noise levels (model.dynamics.denoise_steps \
                     in its checkpoint); the sampler was asked for {steps}"
                ),
            });
        }
    }
    if !(0.0..=1.0).contains(&cfg.context_noise) {
        return Err(NnError::InvalidConfig {
            field: "context_noise",
            reason: format!("must be in [0, 1], got {}", cfg.context_noise),
        });
    }
    // On the CPU the other pool threads poll for the rollout's parallel ops instead of
    // sleeping; a GPU rollout leaves them asleep.
    let _warm = ops::on_cpu(&context.device()).then(WarmPool::new);
    let device = context.device();
    let k_ctx = context_level(cfg.context_noise, k_levels);
    let mut state = State {
        dynamics,
        actions,
        device: device.clone(),
        dims: [b, n, l],
        k_ctx,
        noisy: Vec::new(),
        cache: None,
        rng: jinn_data::rng::rng_for(cfg.seed, "diffusion-sample", 0),
    };
    if cfg.use_cache {
        state.cache = Some(AxialKvCache::new(&dynamics.transformer, b, n + 2, frames, &device)?);
    }
    let mut clean: Vec<Tensor<3>> = Vec::with_capacity(frames); // [b, n, l] per frame
    for f in 0..c {
        let z = context.clone().slice([0..b, f..f + 1, 0..n, 0..l]).reshape([b, n, l]);
        state.commit(f, z.clone())?;
        clean.push(z);
    }
    for f in c..frames {
        let mut x = state.noise(); // τ = 0: pure noise [b, n, l]
        for k in 0..k_levels {
            let pred = state.predict(f, x.clone(), k)?; // [b, n, l]
            x = denoise_step(x, pred, k, k_levels);
        }
        state.commit(f, x.clone())?;
        clean.push(x);
    }
    Ok(Tensor::stack(clean, 1)) // [b, frames, n, l]
}

/// The sampler's working state.
struct State<'a> {
    dynamics: &'a DiffusionDynamics,
    /// `[B, S−1, La]`.
    actions: Tensor<3>,
    device: Device,
    /// `[B, N, L]`.
    dims: [usize; 3],
    /// Level of the re-noised context frames.
    k_ctx: usize,
    /// The re-noised latents of every final frame so far `[B, N, L]` (uncached path input).
    noisy: Vec<Tensor<3>>,
    cache: Option<AxialKvCache>,
    rng: ChaCha8Rng,
}

impl State<'_> {
    /// Standard normal noise `[B, N, L]` from the sampler's generator.
    fn noise(&mut self) -> Tensor<3> {
        let [b, n, l] = self.dims;
        Tensor::from_data(TensorData::new(normal_vec(b * n * l, &mut self.rng), [b, n, l]), &self.device)
    }

    /// Frame `f` is final with clean latents `z`: re-noise it to the context level and add it
    /// to the context (the cache, or the stored inputs of the uncached path).
    fn commit(&mut self, f: usize, z: Tensor<3>) -> Result<(), NnError> {
        let tau = signal_level(self.k_ctx, self.dynamics.levels());
        let noisy = z.mul_scalar(tau) + self.noise().mul_scalar(1.0 - tau); // [b, n, l]
        if let Some(cache) = self.cache.as_mut() {
            let x = frame_input(self.dynamics, &self.actions, f, noisy.clone(), self.k_ctx, &self.device); // [b, n+2, l]
            let [b, s, l] = x.dims();
            let m = self.dynamics.transformer.proj_in.weight.shape().dims::<2>()[1];
            let h = stem_rows(&self.dynamics.transformer, x.reshape([b * s, l])).reshape([b, s, m]);
            cache.commit_pass(&self.dynamics.transformer, h)?;
        }
        self.noisy.push(noisy);
        Ok(())
    }

    /// The model's clean prediction `[B, N, L]` for frame `f` at latents `x` labelled level `k`.
    fn predict(&mut self, f: usize, x: Tensor<3>, k: usize) -> Result<Tensor<3>, NnError> {
        let [b, n, l] = self.dims;
        match self.cache.as_mut() {
            Some(cache) => {
                let input = frame_input(self.dynamics, &self.actions, f, x, k, &self.device); // [b, n+2, l]
                let out = cache.forward_frame(&self.dynamics.transformer, input)?; // [b, n+2, l]
                Ok(out.slice([0..b, 2..n + 2, 0..l]))
            }
            None => {
                let mut seq = self.noisy[..f].to_vec();
                seq.push(x);
                let noisy = Tensor::stack(seq, 1); // [b, f+1, n, l]
                let mut levels = vec![self.k_ctx as i64; b * (f + 1)];
                for bi in 0..b {
                    levels[bi * (f + 1) + f] = k as i64;
                }
                let levels = Tensor::<2, Int>::from_data(TensorData::new(levels, [b, f + 1]), &self.device);
                let la = self.dynamics.action_dim();
                let acts = self.actions.clone().slice([0..b, 0..f, 0..la]); // [b, f, la]
                let pred = self.dynamics.predict(noisy, levels, acts)?; // [b, f+1, n, l]
                Ok(pred.slice([0..b, f..f + 1, 0..n, 0..l]).reshape([b, n, l]))
            }
        }
    }
}

/// The transformer input of frame `f` alone `[B, N+2, L]`: the action slot (zero for frame 0,
/// `action_up(a_f)` otherwise), the embedding of level `k`, and the latents `x` `[B, N, L]`.
fn frame_input(
    dynamics: &DiffusionDynamics,
    actions: &Tensor<3>,
    f: usize,
    x: Tensor<3>,
    k: usize,
    device: &Device,
) -> Tensor<3> {
    let [b, _, l] = x.dims();
    let action = if f == 0 {
        Tensor::zeros([b, 1, l], device)
    } else {
        let la = dynamics.action_dim();
        linear_rows(&dynamics.action_up, actions.clone().slice([0..b, f - 1..f, 0..la]))
        // [b, 1, l]
    };
    let ids = Tensor::<1, Int>::from_data(TensorData::new(vec![k as i64], [1]), device);
    let level = dynamics.level_embed.val().select(0, ids).reshape([1, 1, l]).expand([b, 1, l]); // [b, 1, l]
    Tensor::cat(vec![action, level, x], 1) // [b, n+2, l]
}

#[cfg(test)]
mod tests;
