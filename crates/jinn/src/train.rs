//! `jinn train …`: train a model with the shared training loop.

mod progress;
mod tokenizer;

use clap::Subcommand;

/// Training subcommands.
#[derive(Subcommand)]
pub enum TrainCommand {
    /// Train the VQ-VAE video tokenizer on a dataset's train/ split (val/ for validation).
    Tokenizer(tokenizer::TokenizerArgs),
}

/// Run a training subcommand.
pub fn run(cmd: TrainCommand) -> anyhow::Result<()> {
    match cmd {
        TrainCommand::Tokenizer(a) => tokenizer::run(a),
    }
}
