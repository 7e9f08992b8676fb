//! `jinn bench …`: benchmarks that report ratios against a baseline measured in the same run
//! (machines are noisy; only ratios carry over between them).

mod data;
pub mod graph;

use clap::Subcommand;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Loader frames/s with 1 and 2 threads (vs. bare decoding), and write throughput (vs.
    /// bare zstd), on zstd ArrayRecord clips of a built-in game.
    Data(data::DataBenchArgs),
    /// Knowledge-graph link prediction (Nations, UMLS) and 2-hop path questions vs baselines.
    Graph(graph::GraphBenchArgs),
}

/// Run a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Data(a) => data::run(a),
        BenchCommand::Graph(a) => graph::run(a),
    }
}
