//! `jinn bench gpu`: what a GPU does with jinn's models, in a few minutes. It prints the
//! adapter, measures the device's dense-matmul peak (the baseline every ratio is taken
//! against, in the same run), then times the training steps of the tokenizer, LAM and MaskGIT
//! dynamics at jasmine-small and the tokenizer at jasmine-default, in f32 and in bf16: median
//! ms/step, peak device memory, TFLOP/s from the step's counted FLOPs and that as a share of
//! the peak; last, MaskGIT and causal sampling frames/s (`jinn bench sample`).
//!
//! The configs are built into the binary, so a copied binary runs it on a machine without
//! the repository.

use super::sample::{self, SampleBenchArgs};
use super::train::{self, roofline, BenchTask, TrainBenchArgs};
use crate::device::{DeviceArgs, DeviceSpec};
use anyhow::Context;
use burn::tensor::FloatDType;
use std::time::Duration;

/// Arguments of `jinn bench gpu`.
#[derive(clap::Args)]
pub struct GpuBenchArgs {
    /// Device to measure (same forms as `--device` elsewhere; here the default is `wgpu`, the
    /// adapter wgpu picks).
    #[arg(long = "device", value_name = "DEVICE", default_value = "wgpu")]
    pub device: DeviceSpec,
    /// Timed training steps per row.
    #[arg(long, default_value_t = 10)]
    pub steps: u64,
    /// Untimed warm-up steps per row (kernel compilation and autotuning happen here).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Side of the square products the matmul peak is measured on (8192² fills a large GPU).
    #[arg(long, default_value_t = 8192)]
    pub peak_side: usize,
    /// Which rows: `small` (jasmine-small tokenizer, LAM, dynamics), `default` (the
    /// jasmine-default tokenizer) or `all`.
    #[arg(long, value_enum, default_value = "all")]
    pub rows: Rows,
    /// Frames per sampling rollout (0 skips the sampling figures).
    #[arg(long, default_value_t = 16)]
    pub sample_frames: usize,
    /// Override a config value in every row, e.g. `--set train.batch_size=4` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// The rows `jinn bench gpu` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Rows {
    /// The jasmine-small tokenizer, LAM and MaskGIT dynamics.
    Small,
    /// The jasmine-default tokenizer.
    Default,
    /// Both.
    All,
}

/// One timed model: its name, task, config name and config (built into the binary).
type Row = (&'static str, BenchTask, &'static str, &'static str);

#[rustfmt::skip]
const ROWS: [Row; 4] = [
    ("Tokenizer", BenchTask::Tokenizer, "jasmine-small/tokenizer", include_str!("../../../../configs/jasmine-small/tokenizer.toml")),
    ("LAM", BenchTask::Lam, "jasmine-small/lam", include_str!("../../../../configs/jasmine-small/lam.toml")),
    ("MaskGIT dynamics", BenchTask::Dynamics, "jasmine-small/dynamics", include_str!("../../../../configs/jasmine-small/dynamics.toml")),
    ("Tokenizer", BenchTask::Tokenizer, "jasmine-default/tokenizer", include_str!("../../../../configs/jasmine-default/tokenizer.toml")),
];

/// Seconds each matmul peak is measured for.
const PEAK_BUDGET: Duration = Duration::from_secs(3);

/// Run the benchmark.
pub fn run(a: GpuBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.steps >= 1, "--steps must be ≥ 1");
    anyhow::ensure!(a.peak_side >= 64, "--peak-side must be ≥ 64, got {}", a.peak_side);
    let device = a.device.device();
    println!("device: {} — {}", a.device, describe_adapter(a.device));

    let precisions = [(FloatDType::F32, "f32"), (FloatDType::BF16, "bf16")];
    let mut peaks = Vec::new(); // [(dtype, GFLOP/s)] of the precisions the device computes in
    for (dtype, name) in precisions {
        if !device.supports_dtype(dtype) {
            println!("{name} matmul peak: {name} is not supported by this device");
            continue;
        }
        let gflops = roofline::matmul_peak(&device, a.peak_side, dtype, PEAK_BUDGET)
            .with_context(|| format!("measuring the {name} matmul peak"))?;
        println!(
            "{name} matmul peak: {} TFLOP/s ({}² products)",
            roofline::four_digits(gflops / 1e3),
            a.peak_side
        );
        peaks.push((dtype, gflops));
    }

    let rows = ROWS.iter().filter(|(_, _, config_name, _)| match a.rows {
        Rows::Small => config_name.starts_with("jasmine-small"),
        Rows::Default => config_name.starts_with("jasmine-default"),
        Rows::All => true,
    });
    let dir = tempfile::tempdir()?;
    let mut failed = Vec::new(); // labels of the rows whose step failed on this device
    for (i, &(model, task, config_name, text)) in rows.enumerate() {
        let config = dir.path().join(format!("{i}.toml"));
        std::fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
        for (dtype, name) in precisions {
            let label = format!("{model} ({config_name}) {name}");
            let Some(&(_, peak)) = peaks.iter().find(|(d, _)| *d == dtype) else {
                println!("=> {label}: not supported by this device");
                continue;
            };
            let mut overrides = vec![format!("train.precision={name}")];
            overrides.extend(a.overrides.iter().cloned());
            let args = TrainBenchArgs {
                task,
                config: Some(config.clone()),
                overrides,
                data: None,
                steps: a.steps,
                warmup: a.warmup,
                device: DeviceArgs { spec: a.device },
                jasmine_ms: None,
                jasmine_mb: None,
            };
            let tmp = tempfile::tempdir_in(dir.path())?;
            match train::measure(&args, tmp.path()) {
                Ok(m) => println!("=> {label}: {}", figures(&m, peak)),
                // A precision the model does not train in is reported, not a failure.
                Err(e) if format!("{e:#}").contains("train.precision") => println!("=> {label}: {e:#}"),
                // Any other error (a kernel the device cannot run, memory) is reported and the
                // remaining rows still run: one broken kernel must not hide the other figures.
                Err(e) => {
                    println!("=> {label}: FAILED: {e:#}");
                    failed.push(label);
                }
            }
        }
    }

    if a.sample_frames >= 2 {
        println!("sampling (random weights; speed does not depend on training):");
        let s = SampleBenchArgs {
            frames: a.sample_frames,
            reps: 3,
            steps: 25,
            device: DeviceArgs { spec: a.device },
        };
        sample::run(s)?;
    }
    anyhow::ensure!(failed.is_empty(), "{} row(s) failed: {}", failed.len(), failed.join("; "));
    Ok(())
}

/// One row's figures: step time, device memory, and the step's FLOP rate against `peak`.
fn figures(m: &train::Measured, peak_gflops: f64) -> String {
    let median = m.median_ms();
    let memory = match m.device_peak_bytes {
        Some(b) => format!("{:.0} MB peak device memory", b as f64 / 1e6),
        None => "device memory not reported by this backend".into(),
    };
    let rate = match m.macs {
        Some(macs) => {
            let gflops = 2.0 * macs as f64 / 1e9 / (median / 1e3);
            let share = roofline::four_digits(100.0 * gflops / peak_gflops);
            format!(", {} TFLOP/s = {share}% of the matmul peak", roofline::four_digits(gflops / 1e3))
        }
        None => String::new(),
    };
    format!("{median:.1} ms/step (median of {}), {memory}{rate}", m.times_ms.len())
}

/// The adapter `spec` selects, as wgpu names it (name, type, graphics API, driver).
#[cfg(feature = "wgpu")]
fn describe_adapter(spec: DeviceSpec) -> String {
    use crate::device::WgpuAdapter;
    use burn::tensor::wgpu::wgpu;
    let DeviceSpec::Wgpu(adapter) = spec else { return "Burn's CPU backend with jinn's CPU kernels".into() };
    let infos = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt.block_on(async {
            let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
                backends: wgpu::Backends::PRIMARY,
                ..wgpu::InstanceDescriptor::new_without_display_handle()
            });
            instance.enumerate_adapters(wgpu::Backends::PRIMARY).await.iter().map(|a| a.get_info()).collect()
        }),
        Err(_) => Vec::new(),
    };
    let of_type = |t: wgpu::DeviceType| infos.iter().filter(move |i| i.device_type == t);
    let chosen = match adapter {
        WgpuAdapter::Software => of_type(wgpu::DeviceType::Cpu).next(),
        WgpuAdapter::Integrated => of_type(wgpu::DeviceType::IntegratedGpu).next(),
        WgpuAdapter::Discrete(n) => of_type(wgpu::DeviceType::DiscreteGpu).nth(n),
        WgpuAdapter::Default => of_type(wgpu::DeviceType::DiscreteGpu).chain(infos.iter()).next(),
    };
    match chosen {
        Some(i) => format!(
            "{} ({:?}, {:?}, driver {} {})",
            i.name, i.device_type, i.backend, i.driver, i.driver_info
        ),
        None => format!("no matching adapter among {} found", infos.len()),
    }
}

/// Without a GPU feature only the CPU can be named.
#[cfg(not(feature = "wgpu"))]
fn describe_adapter(_spec: DeviceSpec) -> String {
    "Burn's CPU backend with jinn's CPU kernels".into()
}
