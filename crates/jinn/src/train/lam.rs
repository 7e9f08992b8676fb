//! `jinn train lam`: the latent action model on a jinn dataset.

use super::run_args::RunArgs;

/// Arguments of `jinn train lam`.
#[derive(clap::Args)]
pub struct LamArgs {
    /// Config, data, run directory and loop flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(LamArgs { run }: LamArgs) -> anyhow::Result<()> {
    super::registered::train("lam", &run, Ok)
}
