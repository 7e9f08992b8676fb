//! `jinn bench …`: benchmarks that report ratios against a baseline measured in the same run
//! (machines are noisy; only ratios carry over between them).

mod data;
mod serve;

use clap::Subcommand;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Loader frames/s with 1 and 2 threads (vs. bare decoding), and write throughput (vs.
    /// bare zstd), on zstd ArrayRecord clips of a built-in game.
    Data(data::DataBenchArgs),
    /// Step latency (p50/p95) and frames/s through the HTTP API vs. calling the model directly,
    /// with the fake model.
    Serve(serve::ServeBenchArgs),
}

/// Run a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Data(a) => data::run(a),
        BenchCommand::Serve(a) => serve::run(a),
    }
}
