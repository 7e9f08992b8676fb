//! Sampler flags shared by `jinn sample`, `jinn eval world` and the demo.

use jinn_world::SamplerConfig;
use std::path::Path;

/// How frames are sampled: MaskGIT steps, temperature, argmax; diffusion steps and context
/// noise.
#[derive(clap::Args, Clone, Debug)]
pub struct SamplerArgs {
    /// MaskGIT refinement steps per frame.
    #[arg(long, default_value_t = 25)]
    pub steps: usize,
    /// Sampling temperature (0 = argmax).
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f64,
    /// Take the most likely token at every step (the reference sample script's default).
    #[arg(long)]
    pub argmax: bool,
    /// Diffusion: denoising steps per frame; must equal the K the model was trained with
    /// (default: the model's K, stored in its checkpoint).
    #[arg(long)]
    pub denoise_steps: Option<usize>,
    /// Diffusion: context corruption c_f; context frames are re-noised to signal level
    /// round((1 − c_f)·K)/K.
    #[arg(long, default_value_t = 0.1)]
    pub context_noise: f64,
    /// Token models: frames the tokenizer, LAM and dynamics see at once (default: the clip
    /// length the dynamics was trained on). Longer rollouts slide: each later frame comes
    /// from the window − 1 frames before it, at the temporal positions the models know.
    #[arg(long)]
    pub window: Option<usize>,
}

impl SamplerArgs {
    /// The demo's sampler: 25 steps, argmax.
    pub fn demo() -> Self {
        SamplerArgs {
            steps: 25,
            temperature: 1.0,
            argmax: true,
            denoise_steps: None,
            context_noise: 0.1,
            window: None,
        }
    }

    /// The cached sampler with these settings for the dynamics run `run`, seeded with `seed`;
    /// without `--window`, the window is the run's training clip length.
    pub fn config(&self, seed: u64, run: &Path) -> SamplerConfig {
        SamplerConfig {
            window: self.window.or_else(|| jinn_world::trained_clip_frames(run)),
            maskgit_steps: self.steps,
            temperature: self.temperature,
            argmax: self.argmax,
            seed,
            use_cache: true,
            denoise_steps: self.denoise_steps,
            context_noise: self.context_noise,
        }
    }
}
