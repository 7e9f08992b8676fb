//! `jinn bench train`: time full training steps (forward, backward, AdamW update — the
//! update step that `jinn train tokenizer|lam|dynamics` runs) of the tokenizer, the
//! LAM or a dynamics model of any kind and report the median / p10 / p90 ms per step and the
//! peak resident memory, with their ratios to the targets and to Jasmine's figures at
//! jasmine-small where those exist (tokenizer, LAM, MaskGIT dynamics), and the step's matmul
//! work with the time floor it sets on the device.

pub(crate) mod roofline;
mod setup;

use crate::device::DeviceArgs;
use anyhow::{bail, Context};
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::FrameShape;
use jinn_train::config::TrainConfig;
use jinn_world::DynamicsKind;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which model's training step `jinn bench train` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchTask {
    /// The VQ-VAE video tokenizer (`jinn train tokenizer`).
    Tokenizer,
    /// The latent action model (`jinn train lam`).
    Lam,
    /// Dynamics (`model.kind`: MaskGIT, causal or diffusion) on a frozen tokenizer and frozen
    /// LAM (`jinn train dynamics --lam RUN`).
    Dynamics,
}

/// Arguments of `jinn bench train`.
#[derive(clap::Args)]
pub struct TrainBenchArgs {
    /// Model to train: tokenizer, lam or dynamics.
    #[arg(long, value_enum, default_value = "tokenizer")]
    pub task: BenchTask,
    /// Run config of the task (e.g. configs/jasmine-small/tokenizer.toml, lam.toml,
    /// dynamics.toml); Jasmine's defaults when omitted.
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
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Jasmine's step time measured on this host, ms (docs/performance.md, "Jasmine on the same
    /// host"): the step is then also compared with it, against the target's speed-up.
    #[arg(long, value_name = "MS")]
    pub jasmine_ms: Option<f64>,
    /// Jasmine's peak RSS measured on this host, MB (with `--jasmine-ms`).
    #[arg(long, value_name = "MB", requires = "jasmine_ms")]
    pub jasmine_mb: Option<f64>,
}

/// The figures a task's step time and peak memory are compared with.
#[derive(Clone, Copy)]
struct Reference {
    /// What the targets ask for, printed with them.
    basis: &'static str,
    /// Target step time, ms.
    target_ms: f64,
    /// Target peak RSS, MB.
    target_mb: f64,
    /// Jasmine (JAX 0.7.2, CPU) step time on the same machine kind, ms.
    jasmine_ms: f64,
    /// Jasmine's peak RSS, MB.
    jasmine_mb: f64,
}

/// Tokenizer at jasmine-small: ≤ 130 ms (≈ 2.9× faster than Jasmine's ≈ 380 ms), ≤ 400 MB
/// (0.4× its ≈ 1.0 GB).
const TOKENIZER: Reference = Reference {
    basis: "2.9× faster than Jasmine at 0.4× its peak RSS",
    target_ms: 130.0,
    target_mb: 400.0,
    jasmine_ms: 380.0,
    jasmine_mb: 1000.0,
};
/// LAM at jasmine-small: ≥ 3× faster than Jasmine's ≈ 350 ms, ≤ 0.4× its ≈ 1.2 GB.
const LAM: Reference = Reference {
    basis: "3× faster than Jasmine at 0.4× its peak RSS",
    target_ms: 350.0 / 3.0,
    target_mb: 0.4 * 1200.0,
    jasmine_ms: 350.0,
    jasmine_mb: 1200.0,
};
/// MaskGIT dynamics at jasmine-small: ≥ 3× faster than Jasmine's ≈ 440 ms, ≤ 0.4× its ≈ 1.2 GB.
const DYNAMICS: Reference = Reference {
    basis: "3× faster than Jasmine at 0.4× its peak RSS",
    target_ms: 440.0 / 3.0,
    target_mb: 0.4 * 1200.0,
    jasmine_ms: 440.0,
    jasmine_mb: 1200.0,
};

/// Build the task, run `warmup + steps` training steps and print the figures.
pub fn run(a: TrainBenchArgs) -> anyhow::Result<()> {
    if a.steps == 0 {
        bail!("--steps must be ≥ 1");
    }
    for (flag, value) in [("--jasmine-ms", a.jasmine_ms), ("--jasmine-mb", a.jasmine_mb)] {
        if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
            bail!("{flag} must be a positive number, got {}", value.unwrap_or_default());
        }
    }
    // Measured before the task exists, so its data loader's threads do not compete.
    let peak_gflops = roofline::matmul_peak_gflops(&a.device.device(), Duration::from_secs(1))?;
    let tmp = tempfile::tempdir()?;
    let measured = measure(&a, tmp.path())?;
    print(&measured, &a, peak_gflops)
}

/// Only the step is timed: no validation, and the LR schedule must span the benchmark.
fn prepare_train(train: &mut TrainConfig, a: &TrainBenchArgs) {
    train.val_every = 0;
    // The step of one rank over the whole batch (thread ranks are a `jinn train` matter).
    train.local_ranks = 1;
    train.steps = train.steps.max(a.warmup + a.steps);
}

/// What the timed steps of one task measured.
pub(crate) struct Measured {
    /// Step times, ms, sorted.
    pub times_ms: Vec<f64>,
    /// Multiply-accumulates of one step, where the task counts them.
    pub macs: Option<u64>,
    /// The most the device's allocator held during the steps, where the backend reports it.
    pub device_peak_bytes: Option<u64>,
    /// The dynamics kind (dynamics only).
    pub kind: Option<DynamicsKind>,
}

impl Measured {
    /// Median step time, ms.
    pub fn median_ms(&self) -> f64 {
        percentile(&self.times_ms, 0.5)
    }
}

/// The figures a step is compared with: Jasmine was measured for the tokenizer, the LAM and
/// MaskGIT dynamics.
fn reference(task: BenchTask, kind: Option<DynamicsKind>) -> Option<&'static Reference> {
    match (task, kind) {
        (BenchTask::Tokenizer, _) => Some(&TOKENIZER),
        (BenchTask::Lam, _) => Some(&LAM),
        (BenchTask::Dynamics, Some(k)) if k == DynamicsKind::MASKGIT => Some(&DYNAMICS),
        (BenchTask::Dynamics, _) => None,
    }
}

/// Build the task of `a` (its data, when generated, and component runs in `tmp`) and time
/// `a.warmup + a.steps` training steps, the last `a.steps` of them.
pub(crate) fn measure(a: &TrainBenchArgs, tmp: &Path) -> anyhow::Result<Measured> {
    let device = a.device.device();
    device.memory_cleanup();
    let registered = |task| -> anyhow::Result<_> {
        let (task, train) = setup::registered(task, a, tmp, device.clone().autodiff())?;
        Ok((task, train, None))
    };
    let (mut task, train, kind) = match a.task {
        BenchTask::Tokenizer => registered("tokenizer")?,
        BenchTask::Lam => registered("lam")?,
        BenchTask::Dynamics => {
            let (task, train, kind) = setup::dynamics(a, tmp, device.clone().autodiff())?;
            (task, train, Some(kind))
        }
    };
    let macs = task.step_macs();
    let mut times_ms = Vec::with_capacity(a.steps as usize);
    let mut device_peak_bytes = None;
    let mut bad_loss = None;
    task.bare_steps(&train, a.warmup + a.steps, &mut |step, time, metrics| {
        let loss = metrics.get("loss").copied().unwrap_or(f64::NAN);
        if !loss.is_finite() {
            bad_loss = Some((step, loss));
            return ControlFlow::Break(());
        }
        if step >= a.warmup {
            times_ms.push(time.as_secs_f64() * 1e3);
        }
        if let Some(usage) = device.memory_pool_usage() {
            device_peak_bytes = Some(device_peak_bytes.unwrap_or(0).max(usage.bytes_reserved));
        }
        ControlFlow::Continue(())
    })?;
    if let Some((step, loss)) = bad_loss {
        bail!("step {step}: the loss is {loss}");
    }
    times_ms.sort_by(f64::total_cmp);
    Ok(Measured { times_ms, macs, device_peak_bytes, kind })
}

/// Print the step-time percentiles, the peak RSS and their ratios to the task's reference,
/// and the step's matmul work against `peak_gflops`.
fn print(m: &Measured, a: &TrainBenchArgs, peak_gflops: f64) -> anyhow::Result<()> {
    let times = &m.times_ms;
    let median = m.median_ms();
    let peak_mb = peak_rss_mb()?;
    println!(
        "ms/step: median {median:.1}, p10 {:.1}, p90 {:.1} (over {} steps)",
        percentile(times, 0.1),
        percentile(times, 0.9),
        times.len()
    );
    println!("peak RSS: {peak_mb:.0} MB (VmHWM)");
    if let Some(bytes) = m.device_peak_bytes {
        println!("peak device memory: {:.0} MB (reserved by the allocator)", bytes as f64 / 1e6);
    }
    let Some(reference) = reference(a.task, m.kind) else {
        let kind = m.kind.map(|k| k.to_string()).unwrap_or_default();
        println!("no target or Jasmine figure for {kind} dynamics (Jasmine was measured for MaskGIT)");
        if let Some(macs) = m.macs {
            roofline::print(macs, median, peak_gflops, None);
        }
        return Ok(());
    };
    let Reference { basis, target_ms, target_mb, jasmine_ms, jasmine_mb } = *reference;
    println!(
        "vs target ({target_ms:.0} ms, {target_mb:.0} MB: {basis}): time ×{:.2}, memory ×{:.2} \
         (≤ 1 meets it)",
        median / target_ms,
        peak_mb / target_mb
    );
    println!(
        "vs Jasmine ({jasmine_ms:.0} ms, {:.1} GB): time ×{:.2}, memory ×{:.2} (< 1 is better)",
        jasmine_mb / 1000.0,
        median / jasmine_ms,
        peak_mb / jasmine_mb
    );
    if let Some(measured_ms) = a.jasmine_ms {
        print_same_host(median, peak_mb, measured_ms, a.jasmine_mb, reference);
    }
    if let Some(macs) = m.macs {
        roofline::print(macs, median, peak_gflops, Some(target_ms));
    }
    Ok(())
}

/// The step against Jasmine measured on this host (`--jasmine-ms`, and `--jasmine-mb` when
/// given), judged by the target ratios (the targets over Jasmine's figures) instead of
/// absolute times.
fn print_same_host(median: f64, peak_mb: f64, jasmine_ms: f64, jasmine_mb: Option<f64>, r: &Reference) {
    let verdict = |ratio: f64, max: f64| if ratio <= max { "meets" } else { "misses" };
    let (time, max_time) = (median / jasmine_ms, r.target_ms / r.jasmine_ms);
    let speed = match time <= 1.0 {
        true => format!("{:.1}× faster", 1.0 / time),
        false => format!("{time:.1}× slower"),
    };
    let mut line = format!(
        "vs Jasmine on this host ({jasmine_ms} ms): time ×{time:.2} ({speed}; the target asks ≤ \
         ×{max_time:.2}: {})",
        verdict(time, max_time)
    );
    if let Some(jasmine_mb) = jasmine_mb {
        let (memory, max_memory) = (peak_mb / jasmine_mb, r.target_mb / r.jasmine_mb);
        line += &format!(
            ", memory ×{memory:.2} of its {jasmine_mb} MB (≤ ×{max_memory:.2}: {})",
            verdict(memory, max_memory)
        );
    }
    println!("{line}");
}

/// A small breakout dataset (train split only) of the tokenizer config's frame size in `dir`.
#[cfg(feature = "mpi")]
pub(crate) fn generate_data(
    cfg: &jinn_world::TokenizerRunConfig,
    dir: &std::path::Path,
) -> anyhow::Result<()> {
    generate_clips(cfg.model.coder().frames(), cfg.data.seq_len, dir)
}

/// A small breakout dataset (train split only) of `frame`-sized frames, with episodes long
/// enough for `seq_len`-frame clips, in `dir`.
fn generate_clips(frame: FrameShape, seq_len: usize, dir: &std::path::Path) -> anyhow::Result<()> {
    if frame.channels != 3 {
        bail!(
            "model.channels is {}; the generated benchmark data is RGB (3 channels) — pass --data \
             with a dataset of {} channels",
            frame.channels,
            frame.channels
        );
    }
    let gen = GenerateConfig {
        episodes: 8,
        val_fraction: 0.0,
        test_fraction: 0.0,
        frame_shape: FrameShape::rgb(frame.height, frame.width),
        min_episode_len: seq_len.max(16),
        max_episode_len: seq_len.max(16) * 4,
        chunk_len: seq_len.max(16),
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
