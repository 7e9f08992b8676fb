//! `jinn lm train`: tokenize the corpus into shards in `<out>/data` (kept for resume and
//! `jinn lm eval`), then train with the shared loop.

use crate::train::progress::TrainProgress;
use crate::train::report::{check_fresh_out, print_summary};
use crate::train::run_args::{run_options, RunArgs};
use anyhow::Context;
use burn::tensor::Device;
use jinn_text::lm::{LmData, LmRunConfig, LmTask};
use jinn_train::train_loop::{run_observed, RunObserver, RunSummary};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `jinn lm train` (`--config`: TOML with `model`, `train`, `data`; `--data`: a
/// directory of `.txt` documents, e.g. data/text/shakespeare).
#[derive(clap::Args)]
pub struct LmTrainArgs {
    /// Config, corpus directory, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The shard directory of a run.
pub fn shard_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("data")
}

/// Train `cfg` on the corpus `data` into `out` on the autodiff `device`, reporting to
/// `observer`; returns the loop summary, the seconds taken and the task.
pub fn train(
    cfg: &LmRunConfig,
    data: &Path,
    out: &Path,
    resume: bool,
    stop_at: Option<u64>,
    device: &Device,
    observer: &mut dyn RunObserver,
) -> anyhow::Result<(RunSummary, f64, LmTask)> {
    check_fresh_out(out, resume)?;
    let shards =
        LmData::prepare(data, &cfg.data.tokenizer, cfg.data.val_docs, cfg.data.split_seed, &shard_dir(out))
            .with_context(|| format!("preparing token shards of {}", data.display()))?;
    tracing::info!(
        "{} train tokens ({} docs), {} val tokens ({} docs: {})",
        shards.meta.train.tokens,
        shards.meta.train.docs.len(),
        shards.meta.val.tokens,
        shards.meta.val.docs.len(),
        shards.meta.val.docs.join(", ")
    );
    let mut task = LmTask::new(cfg, shards, device)?;
    let opts = run_options(out.to_path_buf(), cfg, resume, stop_at);
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &opts, observer)?;
    Ok((summary, t.elapsed().as_secs_f64(), task))
}

/// Train with a progress bar, then print the step count, the time per step and the last metrics.
pub fn run(LmTrainArgs { run: a }: LmTrainArgs) -> anyhow::Result<()> {
    let cfg: LmRunConfig = a.load_config()?;
    tracing::info!(
        "training a {:?} LM ({} blocks, width {}) for {} steps on {} into {}",
        cfg.model.arch,
        cfg.model.depth,
        cfg.model.d_model,
        cfg.train.steps,
        a.device,
        a.out.display()
    );
    let device = a.device.device().autodiff();
    let mut progress = TrainProgress::new(); // a bar on a terminal, log lines otherwise
    let (summary, secs, _) = train(&cfg, &a.data, &a.out, a.resume, a.stop_at, &device, &mut progress)?;
    print_summary(&summary, secs, &a.out)
}
