//! `jinn bench sample`: rollout speed of the world-model samplers with and without KV caches,
//! on randomly initialised dynamics models (speed does not depend on training).

use crate::device::DeviceArgs;
use burn::tensor::{Distribution, Int, Tensor};
use jinn_world::{sample, DynamicsConfig, DynamicsKind, DynamicsRunConfig, SamplerConfig};
use std::time::Instant;

/// Arguments of `jinn bench sample`.
#[derive(clap::Args)]
pub struct SampleBenchArgs {
    /// Frames per rollout (one context frame, the rest generated).
    #[arg(long, default_value_t = 16)]
    pub frames: usize,
    /// Timed rollouts per variant (interleaved; the median is reported).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// MaskGIT steps per frame.
    #[arg(long, default_value_t = 25)]
    pub steps: usize,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// One benchmarked model: kind and tokens per frame (demo width otherwise).
struct Case {
    name: &'static str,
    kind: DynamicsKind,
    tokens: usize,
    target: &'static str,
}

/// Run the benchmark and print frames/s and the cache speed-up.
pub fn run(a: SampleBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.frames >= 2, "--frames must be ≥ 2");
    anyhow::ensure!(a.reps >= 1, "--reps must be ≥ 1");
    let cases = [
        Case { name: "causal", kind: DynamicsKind::CAUSAL, tokens: 16, target: "cache ≥ 10×" },
        Case { name: "maskgit", kind: DynamicsKind::MASKGIT, tokens: 64, target: "cached ≥ 20 frames/s" },
    ];
    // The demo dynamics' shape (configs/demo/dynamics.toml, embedded in the binary).
    let demo: DynamicsRunConfig =
        jinn_train::config::from_str(crate::demo::DYNAMICS_TOML, "configs/demo/dynamics.toml", &[])?;
    let m = &demo.model;
    println!(
        "dynamics at demo size (width {}, FFN {}, {} heads, {} blocks, 256 codes), batch 1, 1 context + {} generated frames",
        m.model_dim,
        m.ffn_dim,
        m.num_heads,
        m.num_blocks,
        a.frames - 1
    );
    let device = a.device.device();
    for case in cases {
        let cfg = DynamicsConfig {
            model_dim: m.model_dim,
            ffn_dim: m.ffn_dim,
            num_heads: m.num_heads,
            num_blocks: m.num_blocks,
            ..DynamicsConfig::default_for(case.kind)
        };
        device.seed(0);
        let model = cfg.init(256, 32, &device)?;
        let context = Tensor::<3, Int>::zeros([1, 1, case.tokens], &device);
        let actions = Tensor::<3>::random([1, a.frames - 1, 32], Distribution::Normal(0.0, 1.0), &device);
        let mut times = [Vec::new(), Vec::new()]; // [cached, uncached] seconds per rollout
        for _ in 0..a.reps {
            for (i, use_cache) in [true, false].into_iter().enumerate() {
                let s = SamplerConfig { maskgit_steps: a.steps, use_cache, ..SamplerConfig::default() };
                let t = Instant::now();
                sample(&model, context.clone(), actions.clone(), a.frames, &s)?;
                times[i].push(t.elapsed().as_secs_f64());
            }
        }
        let fps = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (a.frames - 1) as f64 / v[v.len() / 2]
        };
        let (cached, plain) = (fps(&mut times[0]), fps(&mut times[1]));
        println!(
            "{:8} {:3} tokens/frame: cached {:7.1} frames/s, uncached {:7.1} frames/s, cache speed-up {:5.1}×  (target {})",
            case.name,
            case.tokens,
            cached,
            plain,
            cached / plain,
            case.target
        );
    }
    Ok(())
}
