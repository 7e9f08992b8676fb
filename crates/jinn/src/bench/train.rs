//! `jinn bench train`: time full tokenizer training steps (forward, backward, AdamW update —
//! [`TokenizerTask::train_step`], exactly what `jinn train tokenizer` runs) and report the
//! median / p10 / p90 ms per step and the peak resident memory, with their ratios to the
//! issue-3 targets and to Jasmine's figures at jasmine-small.

use crate::device::DeviceSpec;
use anyhow::{bail, Context};
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::FrameShape;
use jinn_train::train_loop::{StepContext, TrainTask};
use jinn_world::{TokenizerRunConfig, TokenizerTask};
use std::path::PathBuf;
use std::time::Instant;

/// Target step time at jasmine-small (issue 3), ms.
const TARGET_MS: f64 = 130.0;
/// Target peak RSS at jasmine-small (issue 3), MB.
const TARGET_MB: f64 = 400.0;
/// Jasmine (JAX 0.7.2, CPU) step time at jasmine-small, ms.
const JASMINE_MS: f64 = 380.0;
/// Jasmine peak RSS at jasmine-small, MB.
const JASMINE_MB: f64 = 1000.0;

/// Arguments of `jinn bench train`.
#[derive(clap::Args)]
pub struct TrainBenchArgs {
    /// Tokenizer run config (e.g. configs/jasmine-small/tokenizer.toml); Jasmine's defaults
    /// when omitted.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override a config value, e.g. `--set train.batch_size=4` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Dataset directory with a `train/` split; without it, a small breakout dataset of the
    /// config's frame size is generated into a temporary directory.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Timed steps.
    #[arg(long, default_value_t = 20)]
    pub steps: u64,
    /// Untimed warm-up steps before them.
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Compute device: cpu, wgpu:N (build with --features wgpu) or cuda:N (--features cuda).
    #[arg(long, default_value = "cpu")]
    pub device: DeviceSpec,
}

/// Build the task, run `warmup + steps` training steps and print the figures.
pub fn run(a: TrainBenchArgs) -> anyhow::Result<()> {
    if a.steps == 0 {
        bail!("--steps must be ≥ 1");
    }
    let mut cfg: TokenizerRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    // Only the step is timed: no validation, and the schedule must span the benchmark.
    cfg.train.val_every = 0;
    let total = a.warmup + a.steps;
    cfg.train.steps = cfg.train.steps.max(total);

    let tmp = tempfile::tempdir()?;
    let data_dir = match &a.data {
        Some(d) => d.clone(),
        None => {
            generate_data(&cfg, tmp.path())?;
            tmp.path().to_path_buf()
        }
    };
    let device = a.device.device().autodiff();
    let mut task = TokenizerTask::from_config(&cfg, &data_dir, device)
        .with_context(|| format!("setting up tokenizer training on {}", data_dir.display()))?;
    let m = &cfg.model;
    println!(
        "tokenizer {}×{}×{}, patch {}, width {}, FFN {}, {} heads, {}+{} blocks, {} codes; \
         batch {} × {} frames; {} warm-up + {} timed steps",
        m.height,
        m.width,
        m.channels,
        m.patch,
        m.model_dim,
        m.ffn_dim,
        m.num_heads,
        m.encoder_blocks,
        m.decoder_blocks,
        m.num_codes,
        cfg.train.batch_size,
        cfg.data.seq_len,
        a.warmup,
        a.steps
    );

    let mut times = Vec::with_capacity(a.steps as usize);
    for step in 0..total {
        let ctx = StepContext {
            step,
            lr: cfg.train.lr.lr(step, cfg.train.steps),
            grad_accum: cfg.train.grad_accum,
            clip_norm: cfg.train.clip_norm,
            seed: cfg.train.seed,
        };
        let t = Instant::now();
        let metrics = task.train_step(&ctx)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let loss = metrics.get("loss").copied().unwrap_or(f64::NAN);
        if !loss.is_finite() {
            bail!("step {step}: the loss is {loss}");
        }
        if step >= a.warmup {
            times.push(ms);
        }
    }

    times.sort_by(f64::total_cmp);
    let median = percentile(&times, 0.5);
    let peak_mb = peak_rss_mb()?;
    println!(
        "ms/step: median {median:.1}, p10 {:.1}, p90 {:.1} (over {} steps)",
        percentile(&times, 0.1),
        percentile(&times, 0.9),
        times.len()
    );
    println!("peak RSS: {peak_mb:.0} MB (VmHWM)");
    println!(
        "vs target ({TARGET_MS:.0} ms, {TARGET_MB:.0} MB): time ×{:.2}, memory ×{:.2} (≤ 1 meets it)",
        median / TARGET_MS,
        peak_mb / TARGET_MB
    );
    println!(
        "vs Jasmine ({JASMINE_MS:.0} ms, {:.1} GB): time ×{:.2}, memory ×{:.2} (< 1 is better)",
        JASMINE_MB / 1000.0,
        median / JASMINE_MS,
        peak_mb / JASMINE_MB
    );
    Ok(())
}

/// A small breakout dataset (train split only) of the config's frame size in `dir`.
pub(crate) fn generate_data(cfg: &TokenizerRunConfig, dir: &std::path::Path) -> anyhow::Result<()> {
    let m = &cfg.model;
    if m.channels != 3 {
        bail!(
            "model.channels is {}; the generated benchmark data is RGB (3 channels) — pass --data \
             with a dataset of {} channels",
            m.channels,
            m.channels
        );
    }
    let seq = cfg.data.seq_len;
    let gen = GenerateConfig {
        episodes: 8,
        val_fraction: 0.0,
        test_fraction: 0.0,
        frame_shape: FrameShape::rgb(m.height, m.width),
        min_episode_len: seq.max(16),
        max_episode_len: seq.max(16) * 4,
        chunk_len: seq.max(16),
        threads: 1,
        ..Default::default()
    };
    generate_dataset(&gen, dir, &mut |_| {}).context("generating the benchmark dataset")?;
    Ok(())
}

/// The `q`-quantile of sorted `v` (nearest rank).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// Peak resident set size of this process in MB (`VmHWM` of /proc/self/status).
fn peak_rss_mb() -> anyhow::Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .context("no VmHWM line in /proc/self/status")?;
    Ok(kb * 1024.0 / 1e6)
}
