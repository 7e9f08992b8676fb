//! The flags every training command shares (`--config --data --out --set --resume --stop-at
//! --device`), flattened into each command's arguments.

use crate::device::DeviceArgs;
use jinn_train::train_loop::RunOptions;
use serde::Serialize;
use std::path::PathBuf;

/// Metric records kept in each checkpoint's `metrics_head`.
const METRICS_HEAD_LEN: usize = 100;

/// Arguments shared by `jinn train tokenizer|lam|dynamics` and `jinn graph train`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// TOML run config (sections as in the command's example configs); built-in defaults when omitted.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Training data: a dataset directory holding `train/` (and `val/`) as written by
    /// `jinn data gen`, or for `jinn graph train` a directory with train.txt, valid.txt and
    /// test.txt (head<TAB>relation<TAB>tail).
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
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl RunArgs {
    /// Loop options for a run into `--out` that stores `cfg` as its config.
    pub fn run_options<C: Serialize>(&self, cfg: &C) -> RunOptions {
        run_options(self.out.clone(), cfg, self.resume, self.stop_at)
    }
}

/// Loop options for a run into `run_dir` that stores `cfg` as its config.
pub fn run_options<C: Serialize>(
    run_dir: PathBuf,
    cfg: &C,
    resume: bool,
    stop_at: Option<u64>,
) -> RunOptions {
    RunOptions {
        run_dir,
        config_json: jinn_train::config::to_json(cfg),
        resume,
        stop_at,
        metrics_head_len: METRICS_HEAD_LEN,
    }
}
