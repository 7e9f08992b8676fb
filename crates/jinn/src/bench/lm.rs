//! `jinn bench lm`: the RSF language model against the standard transformer of equal
//! parameter count (jinn-text `lm`), on the Shakespeare plays with whole plays held out.
//!
//! 1. Quality: both trained with the same config, steps, batches and seed; validation bits
//!    per byte on the held-out play (target: RSF within 3% of standard).
//! 2. Memory: peak RSS of a training step at several depths with 256-token sequences, each
//!    configuration in a fresh child process (this binary re-run with the hidden `--one`),
//!    RSF-LM by memory-free backprop vs the standard LM by autodiff.
//! 3. Generation: tokens/s of the trained models with the KV cache vs re-running the whole
//!    sequence for every token (the uncached baseline, measured in the same run).

use super::rev::{memory_kb, Materialise};
use crate::device::DeviceArgs;
use crate::lm::train::train;
use anyhow::{bail, Context};
use burn::module::Module;
use burn::tensor::{Int, Tensor, TensorData};
use jinn_text::lm::decode::{last_logits, token_row};
use jinn_text::lm::{bits_per_byte, generate, stream_loss, Arch, LanguageModel, LmRunConfig, Sampling};
use jinn_train::train_loop::{NoObserver, TrainTask};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// Arguments of `jinn bench lm`.
#[derive(clap::Args)]
pub struct LmBenchArgs {
    /// Corpus directory of .txt documents (one held out).
    #[arg(long, default_value = "data/text/shakespeare")]
    pub data: PathBuf,
    /// Training steps of each model.
    #[arg(long, default_value_t = 300)]
    pub steps: u64,
    /// Embedding width of both models.
    #[arg(long, default_value_t = 64)]
    pub width: usize,
    /// Blocks of the quality comparison.
    #[arg(long, default_value_t = 4)]
    pub depth: usize,
    /// Depths of the memory comparison, comma-separated.
    #[arg(long, default_value = "4,8,16,32", value_delimiter = ',')]
    pub mem_depths: Vec<usize>,
    /// Sequence length of the memory comparison.
    #[arg(long, default_value_t = 256)]
    pub mem_seq: usize,
    /// Sequences per batch in the memory comparison.
    #[arg(long, default_value_t = 4)]
    pub mem_batch: usize,
    /// Tokens generated in the speed comparison.
    #[arg(long, default_value_t = 100)]
    pub gen_tokens: usize,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Internal: measure one memory configuration `depth,arch` and print it.
    #[arg(long, hide = true)]
    pub one: Option<String>,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The shared config of both models (only `model.arch` differs).
fn config(a: &LmBenchArgs, arch: Arch, depth: usize, max_seq: usize) -> LmRunConfig {
    let mut cfg = LmRunConfig::default();
    let m = &mut cfg.model;
    (m.arch, m.d_model, m.depth, m.num_heads, m.d_ffn, m.max_seq) =
        (arch, a.width, depth, 4, 4 * a.width, max_seq);
    let t = &mut cfg.train;
    (t.steps, t.seed, t.batch_size) = (a.steps, a.seed, 16);
    (t.lr.warmup_steps, t.lr.decay_steps) = (a.steps / 10, a.steps / 5);
    (t.val_every, t.ckpt_every, t.log_every) = (0, 0, a.steps);
    cfg
}

/// Run the benchmark (or, with `--one`, one memory configuration).
pub fn run(a: LmBenchArgs) -> anyhow::Result<()> {
    if a.width < 8 || !a.width.is_multiple_of(8) {
        bail!("--width must be a positive multiple of 8 (4 heads of even width), got {}", a.width);
    }
    if let Some(one) = &a.one {
        let (depth, arch) = one.split_once(',').context("--one expects `depth,arch`")?;
        let depth: usize = depth.parse().with_context(|| format!("--one: bad depth `{depth}`"))?;
        let (peak, base, params) = measure_memory(&a, depth, arch)?;
        println!("LM_MEM {peak} {base} {params}");
        return Ok(());
    }
    if !a.data.exists() {
        bail!(
            "--data {}: no such corpus directory (run from the repository root or pass --data)",
            a.data.display()
        );
    }
    let models = quality(&a)?;
    memory(&a)?;
    generation(&a, &models)
}

/// Part 1: train both, print validation bits per byte; returns the trained models.
fn quality(a: &LmBenchArgs) -> anyhow::Result<Vec<(Arch, LanguageModel)>> {
    println!(
        "1. quality: byte-level LMs on {}, width {}, depth {}, seq 128, batch 16, {} steps, seed {}",
        a.data.display(),
        a.width,
        a.depth,
        a.steps,
        a.seed
    );
    let mut results = Vec::new();
    for arch in [Arch::Standard, Arch::Rsf] {
        let cfg = config(a, arch, a.depth, 128);
        let dir = tempfile::tempdir()?;
        let device = a.device.device().autodiff();
        let (summary, secs, task) = train(&cfg, &a.data, dir.path(), false, None, &device, &mut NoObserver)?;
        let model = task.model().valid();
        let data = jinn_text::lm::LmData::load(&crate::lm::train::shard_dir(dir.path()))?;
        let (loss, predicted) = stream_loss(&model, &data.val, 16);
        let bpb = bits_per_byte(loss, &data.meta.val);
        println!(
            "   {arch:<8?} params {:>8}  {:>5.0} ms/step  val ({}, {predicted} bytes): {loss:.4} nats/byte, {bpb:.4} bits/byte",
            model.num_params(),
            1e3 * secs / (summary.end_step - summary.start_step).max(1) as f64,
            data.meta.val.docs.join(", ")
        );
        results.push((arch, model, bpb));
    }
    let (std_bpb, rsf_bpb) = (results[0].2, results[1].2);
    println!(
        "   RSF / standard bits per byte: {:.4} ({:+.2}%; target within 3%)",
        rsf_bpb / std_bpb,
        100.0 * (rsf_bpb / std_bpb - 1.0)
    );
    Ok(results.into_iter().map(|(arch, m, _)| (arch, m)).collect())
}

/// Part 2: peak memory of one training step per depth and architecture, in child processes.
fn memory(a: &LmBenchArgs) -> anyhow::Result<()> {
    println!(
        "2. memory: one training step (AdamW), width {}, batch {}×{} tokens, each row a fresh process",
        a.width, a.mem_batch, a.mem_seq
    );
    println!("   {:>5} {:>9} {:>9} {:>12} {:>11}", "depth", "arch", "params", "peak RSS MB", "activ. MB");
    let exe = std::env::current_exe().context("locating the jinn binary to re-run")?;
    for &depth in &a.mem_depths {
        for arch in ["standard", "rsf"] {
            let out = Command::new(&exe)
                .args(["bench", "lm", "--one", &format!("{depth},{arch}"), "--width", &a.width.to_string()])
                .args(["--mem-seq", &a.mem_seq.to_string(), "--mem-batch", &a.mem_batch.to_string()])
                .args(["--device", &a.device.to_string()])
                .output()
                .with_context(|| format!("running {} for depth {depth} {arch}", exe.display()))?;
            if !out.status.success() {
                bail!("depth {depth} {arch} failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line =
                stdout.lines().find_map(|l| l.strip_prefix("LM_MEM ")).context("child printed no LM_MEM")?;
            let f: Vec<u64> = line.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
            let [peak, base, params] = f[..] else { bail!("malformed LM_MEM line `{line}`") };
            // Gradients and AdamW's two moments: 3 f32 per parameter on top of the base RSS.
            let activ = (peak as f64 - base as f64) / 1024.0 - 3.0 * 4.0 * params as f64 / 1e6;
            println!("   {depth:>5} {arch:>9} {params:>9} {:>12.1} {activ:>11.1}", peak as f64 / 1024.0);
        }
    }
    println!("   activ. = peak RSS − RSS after initialisation − gradients − AdamW moments");
    Ok(())
}

/// One child-process measurement: (peak kB, base kB, parameters).
fn measure_memory(a: &LmBenchArgs, depth: usize, arch: &str) -> anyhow::Result<(u64, u64, u64)> {
    let arch = match arch {
        "standard" => Arch::Standard,
        "rsf" => Arch::Rsf,
        other => bail!("--one: arch must be `standard` or `rsf`, got `{other}`"),
    };
    let device = a.device.device().autodiff();
    let cfg = config(a, arch, depth, a.mem_seq);
    let mut model = cfg.model.init(256, a.seed, &device)?;
    model.visit(&mut Materialise);
    let ids: Vec<i64> = (0..a.mem_batch * (a.mem_seq + 1)).map(|i| (i * 31 % 256) as i64).collect();
    let w = Tensor::<2, Int>::from_data(TensorData::new(ids, [a.mem_batch, a.mem_seq + 1]), &device);
    let (x, y) = (w.clone().narrow(1, 0, a.mem_seq), w.narrow(1, 1, a.mem_seq));
    let (_, base_kb) = memory_kb()?;
    let mut optim = cfg.train.optim.init()?;
    let mut engine = cfg.model.backprop.engine(arch);
    for _ in 0..2 {
        let (_, grads) = model.forward_backward(x.clone(), y.clone(), 1.0, engine.as_mut())?;
        model = optim.step(1e-4, model, grads);
    }
    let (peak_kb, _) = memory_kb()?;
    Ok((peak_kb, base_kb, model.num_params() as u64))
}

/// Part 3: tokens/s of cached vs uncached greedy generation.
fn generation(a: &LmBenchArgs, models: &[(Arch, LanguageModel)]) -> anyhow::Result<()> {
    let prompt: Vec<u32> = "ROMEO. ".bytes().map(u32::from).collect();
    let n = a.gen_tokens.min(128 - prompt.len());
    println!("3. generation: {n} tokens after a {}-byte prompt, greedy, batch 1", prompt.len());
    let greedy = Sampling { temperature: 0.0, top_k: 0 };
    for (arch, model) in models {
        let mut rng = jinn_data::rng::rng_for(0, "bench", 0);
        let t = Instant::now();
        let cached = generate(model, &prompt, n, greedy, &mut rng, |_| true)?;
        let cached_s = t.elapsed().as_secs_f64();
        // Uncached: the whole sequence through the model for every new token.
        let t = Instant::now();
        let mut seq = prompt.clone();
        for _ in 0..n {
            let next = greedy.sample(&last_logits(model.forward(token_row(model, &seq))), &mut rng);
            seq.push(next as u32);
        }
        let uncached_s = t.elapsed().as_secs_f64();
        let same = seq[prompt.len()..] == cached[..];
        println!(
            "   {arch:<8?} cached {:>7.1} tokens/s, uncached {:>7.1} tokens/s, speed-up {:.2}× (same tokens: {same})",
            n as f64 / cached_s,
            n as f64 / uncached_s,
            uncached_s / cached_s
        );
    }
    Ok(())
}
