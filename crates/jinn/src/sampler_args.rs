//! Sampler flags shared by `jinn sample`, `jinn eval world` and the demo.

use jinn_world::SamplerConfig;

/// How frames are sampled: MaskGIT steps, temperature, argmax.
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
}

impl SamplerArgs {
    /// The demo's sampler: 25 steps, argmax.
    pub fn demo() -> Self {
        SamplerArgs { steps: 25, temperature: 1.0, argmax: true }
    }

    /// The cached sampler with these settings, seeded with `seed`.
    pub fn config(&self, seed: u64) -> SamplerConfig {
        SamplerConfig {
            maskgit_steps: self.steps,
            temperature: self.temperature,
            argmax: self.argmax,
            seed,
            use_cache: true,
        }
    }
}
