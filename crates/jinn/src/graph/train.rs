//! `jinn graph train`: train a link predictor with the shared loop.

use anyhow::Context;
use burn::tensor::Device;
use jinn_graph::{GraphRunConfig, GraphTask, KnowledgeGraph};
use jinn_train::checkpoint::list_steps;
use jinn_train::metrics_log::{read_metrics, METRICS_FILE};
use jinn_train::train_loop::{run as run_loop, RunOptions, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `jinn graph train`.
#[derive(clap::Args)]
pub struct GraphTrainArgs {
    /// Graph directory with train.txt, valid.txt, test.txt (head<TAB>relation<TAB>tail).
    #[arg(long)]
    pub data: PathBuf,
    /// Run directory: checkpoints, metrics.jsonl, TensorBoard events.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML run config (`model`, `train`, `objective`); built-in defaults when omitted.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override a config value, e.g. `--set model.kind=rotation` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Continue from the newest good checkpoint in `--out`.
    #[arg(long)]
    pub resume: bool,
    /// Stop after this many steps in total (the LR schedule still spans `train.steps`).
    #[arg(long)]
    pub stop_at: Option<u64>,
}

/// Train `cfg` on the graph in `data` into `out`; returns the loop summary and seconds taken.
pub fn train(
    cfg: &GraphRunConfig,
    data: &Path,
    out: &Path,
    resume: bool,
    stop_at: Option<u64>,
) -> anyhow::Result<(RunSummary, f64)> {
    if !resume && out.exists() && !list_steps(out)?.is_empty() {
        anyhow::bail!(
            "{} already holds checkpoints; pass --resume to continue that run or choose another --out",
            out.display()
        );
    }
    let graph =
        Arc::new(KnowledgeGraph::load(data).with_context(|| format!("loading graph {}", data.display()))?);
    let mut task = GraphTask::new(cfg, graph, &Device::flex().autodiff())?;
    let opts = RunOptions {
        run_dir: out.to_path_buf(),
        config_json: jinn_train::config::to_json(cfg),
        resume,
        stop_at,
        metrics_head_len: 100,
    };
    let t = Instant::now();
    let summary = run_loop(&mut task, &cfg.train, &opts)?;
    Ok((summary, t.elapsed().as_secs_f64()))
}

/// Train, then print the step count, the time and the last metrics.
pub fn run(a: GraphTrainArgs) -> anyhow::Result<()> {
    let cfg: GraphRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    tracing::info!(
        "training a {:?} graph model for {} steps into {}",
        cfg.model.kind,
        cfg.train.steps,
        a.out.display()
    );
    let (summary, secs) = train(&cfg, &a.data, &a.out, a.resume, a.stop_at)?;
    println!(
        "steps {}..{} in {secs:.1} s (including validation and checkpoints)",
        summary.start_step, summary.end_step
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
