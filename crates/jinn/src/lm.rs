//! `jinn lm …`: the reversible (RSF) language model of crate `jinn-text`: train, evaluate,
//! generate.

mod eval;
mod generate;
pub mod train;

use clap::Subcommand;

/// Language-model subcommands.
#[derive(Subcommand)]
pub enum LmCommand {
    /// Train an RSF (or standard) language model on a directory of text documents.
    Train(train::LmTrainArgs),
    /// Validation loss and bits per byte of a trained run (held-out documents or --text FILE).
    Eval(eval::LmEvalArgs),
    /// Generate text from a prompt with a trained run (KV-cached decoding).
    Generate(generate::LmGenerateArgs),
}

/// Run a language-model subcommand.
pub fn run(cmd: LmCommand) -> anyhow::Result<()> {
    match cmd {
        LmCommand::Train(a) => train::run(a),
        LmCommand::Eval(a) => eval::run(a),
        LmCommand::Generate(a) => generate::run(a),
    }
}
