//! `jinn train tokenizer`: the VQ-VAE tokenizer on a jinn dataset.

use super::progress::TrainProgress;
use crate::device::DeviceSpec;
use anyhow::Context;
use jinn_train::checkpoint::list_steps;
use jinn_train::metrics_log::{read_metrics, METRICS_FILE};
use jinn_train::train_loop::{run_observed, RunOptions};
use jinn_world::{TokenizerRunConfig, TokenizerTask};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `jinn train tokenizer`.
#[derive(clap::Args)]
pub struct TokenizerArgs {
    /// TOML run config (`model`, `train`, `data` sections); Jasmine's defaults when omitted.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Dataset directory holding `train/` (and `val/`), as written by `jinn data gen`.
    #[arg(long)]
    pub data: PathBuf,
    /// Run directory: checkpoints, metrics.jsonl, TensorBoard events, images.
    #[arg(long)]
    pub out: PathBuf,
    /// Override a config value, e.g. `--set train.steps=500` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Continue from the newest good checkpoint in `--out`.
    #[arg(long)]
    pub resume: bool,
    /// Stop after this many steps in total (the LR schedule still spans `train.steps`).
    #[arg(long)]
    pub stop_at: Option<u64>,
    /// Compute device: cpu, wgpu:N (build with --features wgpu) or cuda:N (--features cuda).
    #[arg(long, default_value = "cpu")]
    pub device: DeviceSpec,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(a: TokenizerArgs) -> anyhow::Result<()> {
    let cfg: TokenizerRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    if !a.resume && a.out.exists() && !list_steps(&a.out)?.is_empty() {
        anyhow::bail!(
            "{} already holds checkpoints; pass --resume to continue that run or choose another --out",
            a.out.display()
        );
    }
    let device = a.device.device().autodiff();
    let mut task = TokenizerTask::from_config(&cfg, &a.data, device)
        .with_context(|| format!("setting up tokenizer training on {}", a.data.display()))?;
    let opts = RunOptions {
        run_dir: a.out.clone(),
        config_json: jinn_train::config::to_json(&cfg),
        resume: a.resume,
        stop_at: a.stop_at,
        metrics_head_len: 100,
    };
    tracing::info!(
        "training the tokenizer for {} steps on {} ({:?}) into {}",
        cfg.train.steps,
        a.device,
        cfg.train.precision,
        a.out.display()
    );
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &opts, &mut TrainProgress::new())?;
    let steps = summary.end_step - summary.start_step;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "steps {}..{} in {secs:.1} s ({:.0} ms/step, including validation and checkpoints)",
        summary.start_step,
        summary.end_step,
        1000.0 * secs / steps.max(1) as f64
    );
    for (path, why) in &summary.skipped_checkpoints {
        println!("skipped corrupted checkpoint {}: {why}", path.display());
    }
    let records = read_metrics(&a.out.join(METRICS_FILE))?;
    for split in ["train", "val"] {
        if let Some(r) = records.iter().rev().find(|r| r.split == split) {
            let m: Vec<String> = r.metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
            println!("{split} @ step {}: {}", r.step, m.join(", "));
        }
    }
    Ok(())
}
