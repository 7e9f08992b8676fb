//! `jinn bench rev`: peak memory and time per training step of a reversible causal stack,
//! standard backprop vs memory-free backprop (jinn-nn `reversible::Engine`), across depths.
//!
//! Peak RSS (`VmHWM`) only grows within a process, so every configuration runs in a fresh child
//! process (this binary re-executed with the hidden `--one depth,mode`), which prints one
//! `REV_RESULT` line that the parent parses into the table.

use crate::device::DeviceArgs;
use anyhow::{bail, Context};
use burn::module::Module;
use burn::nn::Linear;
use burn::optim::GradientsParams;
use burn::tensor::{Distribution, Tensor};
use jinn_nn::reversible::{
    accumulate, backprop_into, forward_standard, Engine, Mode, MonitorConfig, ReversibleCausalBlock,
    ReversibleCausalConfig,
};
use jinn_train::optim::OptimConfig;
use std::process::Command;
use std::time::Instant;

/// Arguments of `jinn bench rev`.
#[derive(clap::Args)]
pub struct RevBenchArgs {
    /// Depths (number of reversible blocks) to measure, comma-separated.
    #[arg(long, default_value = "4,8,16,32,64", value_delimiter = ',')]
    pub depths: Vec<usize>,
    /// Model width M (each coupling half is M/2).
    #[arg(long, default_value_t = 128)]
    pub width: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// Sequence length.
    #[arg(long, default_value_t = 64)]
    pub seq: usize,
    /// Timed training steps per configuration (after one untimed warm-up step).
    #[arg(long, default_value_t = 3)]
    pub steps: usize,
    /// Fresh-process rounds per depth, standard and memory-free alternating; each mode's step time
    /// is the fastest round (the least disturbed by other load on the machine).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Internal: run one configuration `depth,mode` (mode `standard` or `memfree`) and print it.
    #[arg(long, hide = true)]
    pub one: Option<String>,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Stem `Linear(M → M)`, the reversible causal stack, head `Linear(M → M)`.
#[derive(Module, Debug)]
struct BenchModel {
    stem: Linear,
    blocks: Vec<ReversibleCausalBlock>,
    head: Linear,
}

/// One configuration's measurements.
struct Measured {
    depth: usize,
    mode: String,
    peak_kb: u64,
    base_kb: u64,
    params: usize,
    step_ms: f64,
}

/// Run the benchmark (or, with `--one`, one configuration) and print the table.
pub fn run(a: RevBenchArgs) -> anyhow::Result<()> {
    if a.width < 8 || !a.width.is_multiple_of(8) {
        bail!("--width must be a positive multiple of 8 (two halves of 4 heads), got {}", a.width);
    }
    if let Some(one) = &a.one {
        let (depth, mode) = one.split_once(',').context("--one expects `depth,mode`")?;
        let depth: usize = depth.parse().with_context(|| format!("--one: bad depth `{depth}`"))?;
        let m = run_one(&a, depth, mode)?;
        println!(
            "REV_RESULT {} {} {} {} {} {:.3}",
            m.depth, m.mode, m.peak_kb, m.base_kb, m.params, m.step_ms
        );
        return Ok(());
    }
    println!(
        "reversible causal stack: width {}, batch {}×{} tokens, AdamW, {} timed steps per process, \
         {} alternating fresh-process rounds per depth (fastest round shown)",
        a.width, a.batch, a.seq, a.steps, a.rounds
    );
    println!(
        "{:>5} {:>9} {:>10} {:>12} {:>12} {:>11} {:>10} {:>9}",
        "depth", "mode", "params", "peak RSS MB", "state MB", "activ. MB", "step ms", "time ×"
    );
    let exe = std::env::current_exe().context("locating the jinn binary to re-run")?;
    if a.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    for &depth in &a.depths {
        let mut best: [Option<Measured>; 2] = [None, None];
        for _ in 0..a.rounds {
            for (slot, mode) in ["standard", "memfree"].into_iter().enumerate() {
                let m = run_child(&exe, &a, depth, mode)?;
                best[slot] = Some(match best[slot].take() {
                    Some(b) if b.step_ms <= m.step_ms => Measured { peak_kb: b.peak_kb.max(m.peak_kb), ..b },
                    Some(b) => Measured { peak_kb: b.peak_kb.max(m.peak_kb), ..m },
                    None => m,
                });
            }
        }
        let [Some(standard), Some(memfree)] = best else { bail!("depth {depth}: no measurement") };
        let standard_ms = standard.step_ms;
        for m in [standard, memfree] {
            // Parameters, gradients and AdamW's two moments: 4 f32 per parameter. The
            // parameters are already in the base RSS (measured after initialisation).
            let state_mb = 4.0 * 4.0 * m.params as f64 / 1e6;
            let activ_mb = (m.peak_kb as f64 - m.base_kb as f64) / 1024.0 - 3.0 * 4.0 * m.params as f64 / 1e6;
            println!(
                "{:>5} {:>9} {:>10} {:>12.1} {:>12.1} {:>11.1} {:>10.1} {:>9.2}",
                m.depth,
                m.mode,
                m.params,
                m.peak_kb as f64 / 1024.0,
                state_mb,
                activ_mb,
                m.step_ms,
                m.step_ms / standard_ms
            );
        }
    }
    println!(
        "activ. = peak RSS − RSS after initialisation (binary, runtime, parameters) − gradients − \
         AdamW moments; time × = memfree step time / standard step time at the same depth"
    );
    Ok(())
}

/// Runs one configuration in a fresh child process and parses its result line.
fn run_child(exe: &std::path::Path, a: &RevBenchArgs, depth: usize, mode: &str) -> anyhow::Result<Measured> {
    let out = Command::new(exe)
        .args(["bench", "rev", "--one", &format!("{depth},{mode}")])
        .args(["--width", &a.width.to_string(), "--batch", &a.batch.to_string()])
        .args(["--seq", &a.seq.to_string(), "--steps", &a.steps.to_string()])
        .args(["--device", &a.device.to_string()])
        .output()
        .with_context(|| format!("running {} for depth {depth} {mode}", exe.display()))?;
    if !out.status.success() {
        bail!("depth {depth} {mode} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    parse_result(&String::from_utf8_lossy(&out.stdout))
}

fn parse_result(stdout: &str) -> anyhow::Result<Measured> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("REV_RESULT "))
        .with_context(|| format!("child printed no REV_RESULT line: {stdout}"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 6 {
        bail!("malformed REV_RESULT line `{line}`");
    }
    Ok(Measured {
        depth: f[0].parse()?,
        mode: f[1].to_string(),
        peak_kb: f[2].parse()?,
        base_kb: f[3].parse()?,
        params: f[4].parse()?,
        step_ms: f[5].parse()?,
    })
}

/// `VmHWM` and `VmRSS` of this process in kB, from `/proc/self/status`.
pub(super) fn memory_kb() -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status.lines().find(|l| l.starts_with(name)).with_context(|| format!("no {name}"))?;
        Ok(line.split_whitespace().nth(1).context("empty field")?.parse()?)
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

pub(super) use jinn_nn::init::Materialise;

fn run_one(a: &RevBenchArgs, depth: usize, mode: &str) -> anyhow::Result<Measured> {
    let memfree = match mode {
        "standard" => false,
        "memfree" => true,
        other => bail!("--one: mode must be `standard` or `memfree`, got `{other}`"),
    };
    let device = a.device.device().autodiff();
    device.seed(0);
    let m = a.width;
    let mut model = BenchModel {
        stem: jinn_nn::init::linear(m, m, &device),
        blocks: ReversibleCausalConfig::new(m, 2 * m, 4).init_stack(depth, &device)?,
        head: jinn_nn::init::linear(m, m, &device),
    };
    model.visit(&mut Materialise);
    let params = model.num_params();
    let x = Tensor::<3>::random([a.batch, a.seq, m], Distribution::Normal(0.0, 1.0), &device);
    let target = Tensor::<3>::random([a.batch, a.seq, m], Distribution::Normal(0.0, 1.0), &device);
    let (_, base_kb) = memory_kb()?;

    let mut optim = OptimConfig::default().init()?;
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig { every: 0, threshold: 1e-3 });
    let mut elapsed = 0.0;
    for step in 0..=a.steps {
        let t = Instant::now();
        let grads = if memfree {
            let h = model.stem.forward(x.clone()); // [batch, seq, M]
            let (y, tape) = engine.forward(&model.blocks, h.clone())?;
            let loss = (model.head.forward(y.clone()) - target.clone()).powi_scalar(2).mean();
            let mut g = loss.backward();
            let gy = y.grad_remove(&mut g).context("no gradient reached the stack output")?;
            let mut grads = GradientsParams::from_module(&mut g, &model.head);
            let gh = engine.backward(&model.blocks, tape, gy, &mut grads)?;
            let mut g = backprop_into(h, gh);
            accumulate(&mut grads, &model.stem, &mut g);
            grads
        } else {
            let y = forward_standard(&model.blocks, model.stem.forward(x.clone()));
            let loss = (model.head.forward(y) - target.clone()).powi_scalar(2).mean();
            GradientsParams::from_grads(loss.backward(), &model)
        };
        model = optim.step(1e-4, model, grads);
        // Wait for the update to finish before stopping the clock.
        let _: f32 = model.head.bias.as_ref().context("head has a bias")?.val().sum().into_scalar();
        if step > 0 {
            elapsed += t.elapsed().as_secs_f64();
        }
    }
    let (peak_kb, _) = memory_kb()?;
    Ok(Measured {
        depth,
        mode: mode.to_string(),
        peak_kb,
        base_kb,
        params,
        step_ms: 1e3 * elapsed / a.steps.max(1) as f64,
    })
}
