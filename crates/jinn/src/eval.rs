//! `jinn eval …`: evaluate a trained checkpoint on a dataset split.

pub mod play;
mod tokenizer;
pub mod world;

use clap::Subcommand;

/// Evaluation subcommands.
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Reconstruction PSNR/SSIM and codebook usage of a tokenizer checkpoint on a split, and a
    /// ground-truth | reconstruction GIF.
    Tokenizer(tokenizer::EvalTokenizerArgs),
    /// Next-frame and rollout PSNR/SSIM, controllability ΔPSNR, LAM/true-action NMI and, for
    /// the built-in games, objects (ball recall and position, paddle, bricks; maze view and
    /// coins) of a world model (dynamics run) on a split; writes metrics.json.
    World(world::EvalWorldArgs),
    /// Play a breakout world model through `jinn play`'s HTTP API as a person would: do the
    /// left/right keys steer the paddle, does the ball stay in play, do the frames stay on the
    /// game's palette; writes metrics.json.
    Play(play::EvalPlayArgs),
}

/// Run an evaluation subcommand.
pub fn run(cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::Tokenizer(a) => tokenizer::run(a),
        EvalCommand::World(a) => world::run(a),
        EvalCommand::Play(a) => play::run(a),
    }
}
