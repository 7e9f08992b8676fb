//! `jinn train …`: train a model with the shared training loop.

pub(crate) mod dynamics;
mod lam;
pub(crate) mod progress;
pub(crate) mod report;
pub(crate) mod run_args;
mod tokenizer;

use clap::Subcommand;

/// Training subcommands.
#[derive(Subcommand)]
pub enum TrainCommand {
    /// Train the video tokenizer (VQ-VAE, or MAE with `--kind mae`) on a dataset's train/ split
    /// (val/ for validation).
    Tokenizer(tokenizer::TokenizerArgs),
    /// Train the latent action model on a dataset's train/ split (val/ for validation).
    Lam(lam::LamArgs),
    /// Train MaskGIT, causal or diffusion dynamics on a trained tokenizer (and LAM, or recorded
    /// actions).
    Dynamics(dynamics::DynamicsArgs),
}

/// Run a training subcommand.
pub fn run(cmd: TrainCommand) -> anyhow::Result<()> {
    match cmd {
        TrainCommand::Tokenizer(a) => tokenizer::run(a),
        TrainCommand::Lam(a) => lam::run(a),
        TrainCommand::Dynamics(a) => dynamics::run(a),
    }
}
