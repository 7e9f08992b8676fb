//! `jinn bench sfd`: a deep reversible causal stack (RSF) trained as a byte-level language
//! model on Shakespeare with AdamW and with SFD at the same learning rate, both through
//! memory-free backprop. Reports the relative reconstruction error
//! `‖inverse(forward(x)) − x‖ / ‖x‖` of the stack over training, the final validation loss
//! and the coupling matrices' final spectral norms. Several SFD variants (`--bounds`,
//! `--scalings`) run against one AdamW baseline.
//!
//! The model is jinn-text's RSF language model (`jinn lm`), byte-level.

use crate::device::DeviceArgs;
use anyhow::{bail, Context};
use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_nn::reversible::{Engine, Mode, MonitorConfig};
use jinn_text::lm::{Arch, Backprop, LanguageModel, LmModelConfig};
use jinn_train::optim::sfd::spectral_norm;
use jinn_train::optim::spectral::coupling_weights;
use jinn_train::optim::{BoundScaling, OptimConfig, OptimizerKind};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `jinn bench sfd`.
#[derive(clap::Args)]
pub struct SfdBenchArgs {
    /// Text file to model byte by byte (the last 10% is the validation split).
    #[arg(long, default_value = "data/text/shakespeare/comedy_of_errours_gut_f.txt")]
    pub data: PathBuf,
    /// Reversible blocks.
    #[arg(long, default_value_t = 64)]
    pub depth: usize,
    /// Width M of the reversible stream (each coupling half, and the embedding, is M/2).
    #[arg(long, default_value_t = 32)]
    pub width: usize,
    /// Attention heads per half.
    #[arg(long, default_value_t = 2)]
    pub heads: usize,
    /// Sequence length in bytes.
    #[arg(long, default_value_t = 32)]
    pub seq: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Training steps per optimiser.
    #[arg(long, default_value_t = 300)]
    pub steps: u64,
    /// Learning rate (constant, the same for both optimisers).
    #[arg(long, default_value_t = 3e-2)]
    pub lr: f64,
    /// SFD spectral bounds (`train.optim.spectral_bound`): one SFD run per bound and scaling,
    /// all compared with one AdamW run (comma-separated, e.g. `--bounds 4,6,8`).
    #[arg(long, alias = "bound", value_delimiter = ',', num_args = 1..,
          default_values_t = vec![OptimConfig::default().spectral_bound])]
    pub bounds: Vec<f64>,
    /// SFD bound scalings (`train.optim.spectral_scaling`): `uniform` (every matrix ≤ bound)
    /// and/or `shape` (a fan_in → fan_out matrix ≤ bound·√(fan_out/fan_in)), comma-separated.
    #[arg(long, value_delimiter = ',', num_args = 1..,
          default_values_t = vec![OptimConfig::default().spectral_scaling])]
    pub scalings: Vec<BoundScaling>,
    /// Measure the reconstruction error every N steps (and at step 0 and the end).
    #[arg(long, default_value_t = 50)]
    pub every: u64,
    /// Validation batches for the final loss.
    #[arg(long, default_value_t = 8)]
    pub val_batches: usize,
    /// Seed of the initialisation and the batch draws (the same for both optimisers).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// One optimiser's run.
struct Outcome {
    name: String,
    /// (step, relative reconstruction error) at each measurement.
    errors: Vec<(u64, f64)>,
    final_train_loss: f64,
    val_loss: f64,
    seconds: f64,
    /// Coupling-matrix role (e.g. `f.attn.query`) → spectral norms at the end and how many
    /// sit at their bound (SFD).
    roles: BTreeMap<String, RoleNorms>,
}

/// Final spectral norms of the coupling matrices of one role across the stack.
#[derive(Default)]
struct RoleNorms {
    sigmas: Vec<f64>,
    at_bound: usize,
}

impl Outcome {
    fn max_error(&self) -> f64 {
        self.errors.iter().map(|e| e.1).fold(0.0, f64::max)
    }
}

/// Run the benchmark and print the comparison.
pub fn run(a: SfdBenchArgs) -> anyhow::Result<()> {
    if a.width < 4 || !a.width.is_multiple_of(2) || !(a.width / 2).is_multiple_of(a.heads.max(1)) {
        bail!("--width must be even with --heads dividing width/2, got width {} heads {}", a.width, a.heads);
    }
    if a.seq < 2 || a.batch == 0 || a.steps == 0 || a.every == 0 {
        bail!("--seq must be ≥ 2 and --batch, --steps, --every ≥ 1");
    }
    let text = std::fs::read(&a.data).with_context(|| format!("reading --data {}", a.data.display()))?;
    let split = text.len() * 9 / 10;
    let (train, val) = text.split_at(split);
    if val.len() <= a.seq + 1 {
        bail!("--data {}: {} bytes is too short for --seq {}", a.data.display(), text.len(), a.seq);
    }
    println!(
        "byte LM on {} ({} train / {} val bytes): depth-{} reversible causal stack, width {}, \
         {} heads/half, batch {}×{}, {} steps at lr {}, memory-free backprop",
        a.data.display(),
        train.len(),
        val.len(),
        a.depth,
        a.width,
        a.heads,
        a.batch,
        a.seq,
        a.steps,
        a.lr
    );
    if a.bounds.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
        bail!("--bounds must be finite and > 0, got {:?}", a.bounds);
    }
    let mut runs = vec![train_one(&a, "adamw".into(), &OptimConfig::default(), train, val)?];
    for &scaling in &a.scalings {
        for &bound in &a.bounds {
            let cfg = OptimConfig {
                optimizer: OptimizerKind::Sfd,
                spectral_bound: bound,
                spectral_scaling: scaling,
                ..OptimConfig::default()
            };
            runs.push(train_one(&a, format!("sfd {scaling} {bound}"), &cfg, train, val)?);
        }
    }

    println!("\nrelative reconstruction error ‖inv(fwd(x)) − x‖/‖x‖ of the stack on a validation batch:");
    print!("{:>6}", "step");
    for r in &runs {
        print!(" {:>16}", r.name);
    }
    println!();
    for (i, (step, _)) in runs[0].errors.iter().enumerate() {
        print!("{step:>6}");
        for r in &runs {
            print!(" {:>16.3e}", r.errors[i].1);
        }
        println!();
    }

    println!(
        "\nspectral norm of the coupling matrices after training, median/max over the stack (× at bound):"
    );
    print!("{:>14}", "matrix");
    for r in &runs {
        print!(" {:>20}", r.name);
    }
    println!();
    for role in runs[0].roles.keys() {
        print!("{role:>14}");
        for r in &runs {
            let cell = r.roles.get(role).map_or_else(String::new, |n| {
                let mut sorted = n.sigmas.clone();
                sorted.sort_by(f64::total_cmp);
                let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
                let max = sorted.last().copied().unwrap_or(0.0);
                let at = if r.name == "adamw" { String::new() } else { format!(" ×{}", n.at_bound) };
                format!("{median:.2}/{max:.2}{at}")
            });
            print!(" {cell:>20}");
        }
        println!();
    }

    let base = &runs[0];
    println!(
        "\n{:>16} {:>13} {:>11} {:>9} {:>9} {:>8}  targets (error < 1e-4, val loss ≤ AdamW + 2%)",
        "optim", "max rec. err", "train loss", "val loss", "vs AdamW", "time s"
    );
    for r in &runs {
        let gap = r.val_loss / base.val_loss - 1.0;
        let verdict = if r.name == "adamw" {
            String::new()
        } else {
            let met = |ok: bool| if ok { "met" } else { "NOT met" };
            format!("  error {}, loss {}", met(r.max_error() < 1e-4), met(gap <= 0.02))
        };
        println!(
            "{:>16} {:>13.3e} {:>11.4} {:>9.4} {:>+8.2}% {:>8.1}{verdict}",
            r.name,
            r.max_error(),
            r.final_train_loss,
            r.val_loss,
            100.0 * gap,
            r.seconds
        );
    }
    Ok(())
}

/// The spectral norms of `model`'s coupling matrices grouped by role (the module path without
/// the block index and `.weight`, e.g. `f.attn.query`), with how many are within 0.5% of their
/// bound under `cfg` (SFD only).
fn role_norms(model: &LanguageModel, cfg: &OptimConfig) -> BTreeMap<String, RoleNorms> {
    let mut roles: BTreeMap<String, RoleNorms> = BTreeMap::new();
    for (path, w) in coupling_weights(model) {
        // `rsf.<block>.<role…>.weight`
        let parts: Vec<&str> = path.split('.').collect();
        let role = if parts.len() > 3 { parts[2..parts.len() - 1].join(".") } else { path.clone() };
        let [rows, cols] = w.dims();
        let sigma = spectral_norm(&w, cfg.power_seed, 1e-6, 500);
        let bound = cfg.spectral_scaling.bound_for(cfg.spectral_bound, rows, cols);
        let entry = roles.entry(role).or_default();
        entry.sigmas.push(sigma);
        if cfg.optimizer == OptimizerKind::Sfd && sigma >= bound * 0.995 {
            entry.at_bound += 1;
        }
    }
    roles
}

/// A batch of `batch` windows of `seq + 1` bytes from `data`, at offsets drawn from
/// `(seed, step)`: inputs `[batch, seq]` and next-byte targets `[batch, seq]`.
fn batch(
    data: &[u8],
    batch: usize,
    seq: usize,
    seed: u64,
    step: u64,
    device: &Device,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    let span = data.len() - seq - 1;
    let mut inputs = Vec::with_capacity(batch * seq);
    let mut targets = Vec::with_capacity(batch * seq);
    for b in 0..batch as u64 {
        let start =
            (jinn_data::rng::derive_seed(seed, "bench-sfd-batch", step * 1_000 + b) % span as u64) as usize;
        let window = &data[start..start + seq + 1];
        inputs.extend(window[..seq].iter().map(|&x| x as i64));
        targets.extend(window[1..].iter().map(|&x| x as i64));
    }
    let t = |v: Vec<i64>| Tensor::<2, Int>::from_data(TensorData::new(v, [batch, seq]), device);
    (t(inputs), t(targets))
}

fn train_one(
    a: &SfdBenchArgs,
    name: String,
    cfg: &OptimConfig,
    train: &[u8],
    val: &[u8],
) -> anyhow::Result<Outcome> {
    let device = a.device.device().autodiff();
    let lm = LmModelConfig {
        arch: Arch::Rsf,
        d_model: a.width / 2,
        depth: a.depth,
        num_heads: a.heads,
        d_ffn: 2 * a.width,
        max_seq: a.seq,
        backprop: Backprop::Reconstruct,
    };
    let mut model = lm.init(256, a.seed, &device)?;
    let mut optim: ModuleOptimizer = cfg.init_for(&model)?;
    // The monitor stays off: the bench measures the error itself, and a fallback to standard
    // backprop would hide what a wrong reconstruction does to the gradients.
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig { every: 0, threshold: 1e-3 });
    let plain = device.clone().without_autodiff();
    let (probe, _) = batch(val, a.batch, a.seq, a.seed, u64::MAX / 2, &plain);
    let rec_error = |model: &LanguageModel| model.valid().reconstruction_error(probe.clone()).unwrap_or(0.0);
    let mut errors = vec![(0, rec_error(&model))];
    let started = Instant::now();
    let mut last_loss = f64::NAN;
    for step in 0..a.steps {
        let (inputs, targets) = batch(train, a.batch, a.seq, a.seed, step, &device);
        let (loss, grads) = model.forward_backward(inputs, targets, 1.0, Some(&mut engine))?;
        last_loss = loss;
        model = optim.step(a.lr, model, grads);
        let done = step + 1;
        if done % a.every == 0 || done == a.steps {
            let err = rec_error(&model);
            errors.push((done, err));
            eprintln!("{name} step {done}: train loss {last_loss:.4}, reconstruction error {err:.3e}");
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let eval = model.valid();
    let mut val_loss = 0.0;
    for i in 0..a.val_batches as u64 {
        let (inputs, targets) = batch(val, a.batch, a.seq, a.seed, i, &plain);
        val_loss += LanguageModel::loss(eval.forward(inputs), targets).into_scalar::<f64>();
    }
    val_loss /= a.val_batches.max(1) as f64;
    let roles = role_norms(&eval, cfg);
    eprintln!("{name}: val loss {val_loss:.4} after {seconds:.0} s");
    Ok(Outcome { name, errors, final_train_loss: last_loss, val_loss, seconds, roles })
}
