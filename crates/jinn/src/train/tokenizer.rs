//! `jinn train tokenizer`: the VQ-VAE tokenizer, or with `--kind mae` the MAE tokenizer of the
//! diffusion baseline, on a jinn dataset.

use super::progress::TrainProgress;
use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use anyhow::Context;
use jinn_train::train_loop::{run_observed, TrainTask};
use jinn_world::{MaeTask, TokenizerKind, TokenizerRunConfig, TokenizerTask};
use std::time::Instant;

/// Arguments of `jinn train tokenizer`.
#[derive(clap::Args)]
pub struct TokenizerArgs {
    /// Config, data, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
    /// `vq` or `mae` (overrides `model.kind`; stored in the checkpoint's config).
    #[arg(long)]
    pub kind: Option<TokenizerKind>,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(TokenizerArgs { run: a, kind }: TokenizerArgs) -> anyhow::Result<()> {
    let mut cfg: TokenizerRunConfig = a.load_config()?;
    if let Some(kind) = kind {
        cfg.model.kind = kind;
    }
    check_fresh_out(&a.out, a.resume)?;
    let device = a.device.device().autodiff();
    let setup = || format!("setting up {} tokenizer training on {}", cfg.model.kind, a.data.display());
    match cfg.model.kind {
        TokenizerKind::Vq => {
            train(TokenizerTask::from_config(&cfg, &a.data, device).with_context(setup)?, &cfg, &a)
        }
        TokenizerKind::Mae => {
            train(MaeTask::from_config(&cfg, &a.data, device).with_context(setup)?, &cfg, &a)
        }
    }
}

/// Run the loop on `task`, then print the summary.
fn train<T: TrainTask>(mut task: T, cfg: &TokenizerRunConfig, a: &RunArgs) -> anyhow::Result<()> {
    tracing::info!(
        "training the {} tokenizer for {} steps on {} ({:?}) into {}",
        cfg.model.kind,
        cfg.train.steps,
        a.device,
        cfg.train.precision,
        a.out.display()
    );
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &a.run_options(cfg), &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &a.out)
}
