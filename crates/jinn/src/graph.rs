//! `jinn graph …`: knowledge-graph reasoning with complex amplitudes (crate `jinn-graph`).

mod eval;
mod query;
pub mod train;

use clap::Subcommand;

/// Graph subcommands.
#[derive(Subcommand)]
pub enum GraphCommand {
    /// Train a link predictor on a directory of train/valid/test.txt triples.
    Train(train::GraphTrainArgs),
    /// Filtered MRR and Hits@1/3/10 of a trained run on a graph's test (or other) split.
    Eval(eval::GraphEvalArgs),
    /// Answer a path question (head, r1, r2, …, ?) with a trained run.
    Query(query::GraphQueryArgs),
}

/// Run a graph subcommand.
pub fn run(cmd: GraphCommand) -> anyhow::Result<()> {
    match cmd {
        GraphCommand::Train(a) => train::run(a),
        GraphCommand::Eval(a) => eval::run(a),
        GraphCommand::Query(a) => query::run(a),
    }
}
