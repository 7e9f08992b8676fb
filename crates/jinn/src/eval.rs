//! `jinn eval …`: evaluate a trained checkpoint on a dataset split.

mod tokenizer;
pub mod world;

use clap::Subcommand;

/// Evaluation subcommands.
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Reconstruction PSNR/SSIM and codebook usage of a tokenizer checkpoint on a split, and a
    /// ground-truth | reconstruction GIF.
    Tokenizer(tokenizer::EvalTokenizerArgs),
    /// Next-frame and rollout PSNR/SSIM, controllability ΔPSNR and LAM/true-action NMI of a
    /// world model (dynamics run) on a split; writes metrics.json.
    World(world::EvalWorldArgs),
}

/// Run an evaluation subcommand.
pub fn run(cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::Tokenizer(a) => tokenizer::run(a),
        EvalCommand::World(a) => world::run(a),
    }
}
