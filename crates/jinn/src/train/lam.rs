//! `jinn train lam`: the latent action model on a jinn dataset.

use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use crate::train::progress::TrainProgress;
use anyhow::Context;
use jinn_train::train_loop::run_observed;
use jinn_world::{LamRunConfig, LamTask};
use std::time::Instant;

/// Arguments of `jinn train lam`.
#[derive(clap::Args)]
pub struct LamArgs {
    /// Config, data, run directory and loop flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(LamArgs { run: a }: LamArgs) -> anyhow::Result<()> {
    let cfg: LamRunConfig = a.load_config()?;
    check_fresh_out(&a.out, a.resume)?;
    let device = a.device.device().autodiff();
    let mut task = LamTask::from_config(&cfg, &a.data, device)
        .with_context(|| format!("setting up LAM training on {}", a.data.display()))?;
    tracing::info!("training the LAM for {} steps on {} into {}", cfg.train.steps, a.device, a.out.display());
    let t = Instant::now();
    let summary = run_observed(&mut task, &cfg.train, &a.run_options(&cfg), &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &a.out)
}
