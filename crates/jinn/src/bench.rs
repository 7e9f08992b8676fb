//! Benchmarks.
use clap::Subcommand;
/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {}
/// Run a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> { match cmd {} }
