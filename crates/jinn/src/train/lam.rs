//! `jinn train lam`: the latent action model on a jinn dataset.

use super::report::{check_fresh_out, print_summary};
use anyhow::Context;
use burn::tensor::Device;
use jinn_train::train_loop::{run as run_loop, RunOptions};
use jinn_world::{LamRunConfig, LamTask};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `jinn train lam`.
#[derive(clap::Args)]
pub struct LamArgs {
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
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(a: LamArgs) -> anyhow::Result<()> {
    let cfg: LamRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    check_fresh_out(&a.out, a.resume)?;
    let device = Device::flex().autodiff();
    let mut task = LamTask::from_config(&cfg, &a.data, device)
        .with_context(|| format!("setting up LAM training on {}", a.data.display()))?;
    let opts = RunOptions {
        run_dir: a.out.clone(),
        config_json: jinn_train::config::to_json(&cfg),
        resume: a.resume,
        stop_at: a.stop_at,
        metrics_head_len: 100,
    };
    tracing::info!("training the LAM for {} steps into {}", cfg.train.steps, a.out.display());
    let t = Instant::now();
    let summary = run_loop(&mut task, &cfg.train, &opts)?;
    print_summary(&summary, t, &a.out)
}
