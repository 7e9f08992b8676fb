//! `jinn lm train`: tokenize the corpus into shards in `<out>/data` (kept for resume and
//! `jinn lm eval`), then train with the shared loop.

use crate::train::report::check_fresh_out;
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
    let mut task = lm_task(cfg, data, out, device)?;
    let opts = run_options(out.to_path_buf(), cfg, resume, stop_at);
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &opts, observer)?;
    Ok((summary, t.elapsed().as_secs_f64(), task))
}

/// The LM task of `cfg` on the corpus `data`, its token shards prepared in `out/data` (kept
/// for resume and `jinn lm eval`).
pub fn lm_task(cfg: &LmRunConfig, data: &Path, out: &Path, device: &Device) -> anyhow::Result<LmTask> {
    let shards =
        LmData::prepare(data, &cfg.data.tokenizer, cfg.data.val_docs, cfg.data.split_seed, &shard_dir(out))
            .with_context(|| format!("preparing token shards of {}", data.display()))?;
    tracing::info!(
        "{} train tokens ({} docs), {} val tokens ({} docs: {}); {} blocks of width {}",
        shards.meta.train.tokens,
        shards.meta.train.docs.len(),
        shards.meta.val.tokens,
        shards.meta.val.docs.len(),
        shards.meta.val.docs.join(", "),
        cfg.model.depth,
        cfg.model.d_model,
    );
    Ok(LmTask::new(cfg, shards, device)?)
}

/// `jinn train lm`: the registered task, trained with a progress bar; prints the step count,
/// the time per step and the last metrics.
pub fn run(LmTrainArgs { run: a }: LmTrainArgs) -> anyhow::Result<()> {
    crate::train::registered::train("lm", &a, Ok)
}
