//! `jinn bench …`: benchmarks that report ratios against a baseline measured in the same run
//! (machines are noisy; only ratios carry over between them).

mod data;
mod rev;

use clap::Subcommand;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Loader frames/s with 1 and 2 threads (vs. bare decoding), and write throughput (vs.
    /// bare zstd), on zstd ArrayRecord clips of a built-in game.
    Data(data::DataBenchArgs),
    /// Peak memory and step time of a reversible stack, standard vs memory-free backprop,
    /// across depths (each configuration in a fresh process).
    Rev(rev::RevBenchArgs),
}

/// Run a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Data(a) => data::run(a),
        BenchCommand::Rev(a) => rev::run(a),
    }
}
