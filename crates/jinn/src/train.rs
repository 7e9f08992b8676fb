//! `jinn train …`: train a model with the shared training loop.

mod dynamics;
mod lam;
pub(crate) mod progress;
pub(crate) mod registered;
pub(crate) mod report;
pub(crate) mod run_args;
mod tokenizer;

use clap::Subcommand;

/// Training subcommands: one spelling for every model (`jinn lm train` and `jinn graph train`
/// stay as aliases of `jinn train lm` and `jinn train graph`).
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
    /// Train the MAE tokenizer (diffusion dynamics' continuous tokenizer): `tokenizer --kind
    /// mae`.
    Mae(tokenizer::TokenizerArgs),
    /// Train an RSF (or standard) language model on a directory of text documents (as
    /// `jinn lm train`).
    Lm(crate::lm::train::LmTrainArgs),
    /// Train a knowledge-graph link predictor on train/valid/test.txt triples (as
    /// `jinn graph train`).
    Graph(crate::graph::train::GraphTrainArgs),
}

/// Run a training subcommand.
pub fn run(cmd: TrainCommand) -> anyhow::Result<()> {
    match cmd {
        TrainCommand::Tokenizer(a) => tokenizer::run(a),
        TrainCommand::Lam(a) => lam::run(a),
        TrainCommand::Dynamics(a) => dynamics::run(a),
        TrainCommand::Mae(a) => {
            if a.kind == Some(jinn_world::TokenizerKind::Vq) {
                anyhow::bail!(
                    "jinn train mae --kind vq: the MAE tokenizer is --kind mae (use jinn train tokenizer)"
                );
            }
            tokenizer::run(tokenizer::TokenizerArgs { kind: Some(jinn_world::TokenizerKind::Mae), ..a })
        }
        TrainCommand::Lm(a) => crate::lm::train::run(a),
        TrainCommand::Graph(a) => crate::graph::train::run(a),
    }
}
