//! `jinn graph train`: train a link predictor with the shared loop.

use crate::train::progress::TrainProgress;
use crate::train::report::check_fresh_out;
use crate::train::run_args::{run_options, RunArgs};
use anyhow::Context;
use burn::tensor::Device;
use jinn_graph::{GraphRunConfig, GraphTask, KnowledgeGraph};
use jinn_train::train_loop::{run_observed, RunSummary};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `jinn graph train` (`--config`: TOML with `model`, `train`, `objective`).
#[derive(clap::Args)]
pub struct GraphTrainArgs {
    /// Config, graph directory, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Train `cfg` on the graph in `data` into `out` on `device` (an autodiff device); returns the
/// loop summary and seconds taken.
pub fn train(
    cfg: &GraphRunConfig,
    data: &Path,
    out: &Path,
    resume: bool,
    stop_at: Option<u64>,
    device: &Device,
) -> anyhow::Result<(RunSummary, f64)> {
    check_fresh_out(out, resume)?;
    let mut task = graph_task(cfg, data, device)?;
    let opts = run_options(out.to_path_buf(), cfg, resume, stop_at);
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &opts, &mut TrainProgress::new())?;
    Ok((summary, t.elapsed().as_secs_f64()))
}

/// The link-prediction task of `cfg` on the graph in `data`.
pub fn graph_task(cfg: &GraphRunConfig, data: &Path, device: &Device) -> anyhow::Result<GraphTask> {
    let graph =
        Arc::new(KnowledgeGraph::load(data).with_context(|| format!("loading graph {}", data.display()))?);
    Ok(GraphTask::new(cfg, graph, device)?)
}

/// `jinn train graph`: the registered task, trained with progress; prints the step count, the
/// time per step and the last metrics.
pub fn run(GraphTrainArgs { run: a }: GraphTrainArgs) -> anyhow::Result<()> {
    crate::train::registered::train("graph", &a, Ok)
}
