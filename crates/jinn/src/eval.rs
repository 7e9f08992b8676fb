//! `jinn eval …`: evaluate a trained checkpoint on a dataset split.

mod tokenizer;

use clap::Subcommand;

/// Evaluation subcommands.
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Reconstruction PSNR/SSIM and codebook usage of a tokenizer checkpoint on a split, and a
    /// ground-truth | reconstruction GIF.
    Tokenizer(tokenizer::EvalTokenizerArgs),
}

/// Run an evaluation subcommand.
pub fn run(cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::Tokenizer(a) => tokenizer::run(a),
    }
}
