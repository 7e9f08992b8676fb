//! `jinn train tokenizer`: the VQ-VAE tokenizer on a jinn dataset.

use super::progress::TrainProgress;
use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use anyhow::Context;
use jinn_train::train_loop::run_observed;
use jinn_world::{TokenizerRunConfig, TokenizerTask};
use std::time::Instant;

/// Arguments of `jinn train tokenizer`.
#[derive(clap::Args)]
pub struct TokenizerArgs {
    /// Config, data, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(TokenizerArgs { run: a }: TokenizerArgs) -> anyhow::Result<()> {
    let cfg: TokenizerRunConfig = a.load_config()?;
    check_fresh_out(&a.out, a.resume)?;
    let device = a.device.device().autodiff();
    let mut task = TokenizerTask::from_config(&cfg, &a.data, device)
        .with_context(|| format!("setting up tokenizer training on {}", a.data.display()))?;
    tracing::info!(
        "training the tokenizer for {} steps on {} ({:?}) into {}",
        cfg.train.steps,
        a.device,
        cfg.train.precision,
        a.out.display()
    );
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &a.run_options(&cfg), &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &a.out)
}
