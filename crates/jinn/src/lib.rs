//! The `jinn` command line as a library: [`main`] is the binary's whole body, and [`run_args`]
//! runs a command line in the calling process, so that a test can run many commands in one
//! process (a GPU backend then compiles each kernel once, not once per command).

mod alloc_tuning;
mod args;
mod bench;
mod data;
mod demo;
mod device;
mod eval;
mod graph;
mod lm;
mod logging;
#[cfg(feature = "mpi")]
mod mpi_launch;
mod play;
mod plot;
mod progress;
mod sample;
mod sampler_args;
mod tasks;
mod text;
mod train;

use clap::{Parser, Subcommand};

/// jinn: generative world models and reversible sequence models in Rust.
#[derive(Parser)]
#[command(name = "jinn", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Episode datasets: generate, import, inspect, verify.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Benchmarks that print ratios against a baseline measured in the same run.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Train the world-model stages: video tokenizer (VQ-VAE or MAE), latent actions, dynamics.
    #[command(subcommand)]
    Train(train::TrainCommand),
    /// Text: the MGT tokenizer (train, encode, decode, segment).
    #[command(subcommand)]
    Text(text::TextCommand),
    /// Evaluate trained models: tokenizer reconstruction, world-model rollouts, play.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Render a run's loss and metric curves (metrics.jsonl) to a PNG.
    Plot(plot::PlotArgs),
    /// Knowledge-graph reasoning: train, evaluate and query complex-amplitude link predictors.
    #[command(subcommand)]
    Graph(graph::GraphCommand),
    /// Language model from reversible RSF blocks: train, evaluate, generate.
    #[command(subcommand)]
    Lm(lm::LmCommand),
    /// Play a world model in the browser (serves the page and the /v1 HTTP API).
    Play(play::PlayArgs),
    /// Roll a trained world model out from real context frames: GIF and per-frame PSNR/SSIM.
    Sample(sample::SampleArgs),
    /// Generate breakout data, train tokenizer → LAM → dynamics, sample a rollout GIF.
    Demo(demo::DemoArgs),
}

/// The `jinn` binary: process-wide setup (allocator tuning, logging, joining an MPI job under
/// `mpirun`), then the command of the process's arguments.
pub fn main() -> anyhow::Result<()> {
    alloc_tuning::keep_freed_tensor_buffers();
    logging::init();
    let cli = Cli::parse();
    // Under mpirun: join the job (data-parallel training; see README "Distributed training").
    #[cfg(feature = "mpi")]
    let mpi_job = mpi_launch::join_if_launched()?;
    // MPI is initialised `Funneled`: its calls must come from this thread, so an MPI rank stays on it.
    #[cfg(feature = "mpi")]
    let stay_on_main_thread = mpi_job.is_some();
    #[cfg(not(feature = "mpi"))]
    let stay_on_main_thread = false;
    let run = move || run_command(cli.command);
    let result = if stay_on_main_thread { run() } else { on_compute_pool(run) };
    #[cfg(feature = "mpi")]
    if let Some(job) = mpi_job {
        job.finish(&result);
    }
    result
}

/// Runs the command line `args` (without the program name, e.g. `["train", "tokenizer", …]`) in
/// this process, as the binary runs it but without its process-wide setup: no logging
/// subscriber is installed and no MPI job is joined. A malformed command line is an error
/// carrying clap's message.
pub fn run_args<I, T>(args: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = std::iter::once(std::ffi::OsString::from("jinn")).chain(args.into_iter().map(Into::into));
    let cli = Cli::try_parse_from(args)?;
    on_compute_pool(move || run_command(cli.command))
}

fn run_command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Data(cmd) => data::run(cmd),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Train(cmd) => train::run(cmd),
        Command::Text(cmd) => text::run(cmd),
        Command::Eval(cmd) => eval::run(cmd),
        Command::Plot(a) => plot::run(a),
        Command::Graph(cmd) => graph::run(cmd),
        Command::Lm(cmd) => lm::run(cmd),
        Command::Play(a) => play::run(a),
        Command::Sample(a) => sample::run(a),
        Command::Demo(a) => demo::run(a),
    }
}

/// Runs `job` on a rayon pool with one thread per core, of which the calling thread is one.
///
/// Burn's CPU backend parallelises each matmul (and jinn's CPU kernels) with rayon. Called from
/// outside the pool, every such op wakes the workers, blocks the calling thread until they finish
/// and lets them fall asleep again, while the single-threaded ops in between run on a thread of
/// their own; the handoffs cost about 6 % of a jasmine-small training step on 2 cores. As a
/// worker of the pool the caller takes part in its own parallel work. The caller stays the thread
/// that runs the command, so a command started on the main thread allocates from glibc's main
/// arena (`alloc_tuning`).
fn on_compute_pool<R: Send>(job: impl FnOnce() -> R + Send) -> R {
    thread_local! {
        /// This thread's pool, made on the first command: rayon cannot take a thread back out
        /// of a pool it joined (and a dropped pool's worker 0 would hand its ops to a pool that
        /// has shut down), so the pool lives as long as the process and later commands on the
        /// thread (`run_args`) reuse it.
        static COMPUTE_POOL: std::cell::OnceCell<Option<&'static rayon::ThreadPool>> =
            const { std::cell::OnceCell::new() };
    }
    let pool = COMPUTE_POOL.with(|pool| {
        *pool.get_or_init(|| {
            let built = rayon::ThreadPoolBuilder::new().use_current_thread().stack_size(8 << 20).build();
            built.ok().map(|p| &*Box::leak(Box::new(p)))
        })
    });
    match pool {
        Some(pool) => pool.install(job),
        // No pool (threads cannot be spawned, or this thread already works for one): run where
        // we are, rayon then uses the pool this thread is in or its global pool.
        None => job(),
    }
}

#[cfg(test)]
mod tests {
    use super::{on_compute_pool, run_args};

    #[test]
    fn run_args_runs_a_command_in_process_and_returns_clap_s_error_for_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("data");
        #[rustfmt::skip]
        run_args(["data", "gen", "--episodes", "4", "--size", "16x16", "--min-episode-len", "8",
                  "--max-episode-len", "8", "--out", out.to_str().unwrap()])
        .unwrap();
        assert!(out.join("train").is_dir(), "no dataset written to {}", out.display());
        let err = run_args(["no-such-command"]).unwrap_err().to_string();
        assert!(err.contains("no-such-command"), "{err}");
    }

    #[test]
    fn the_command_runs_on_the_calling_thread_as_worker_0_of_a_pool_with_one_thread_per_core() {
        let caller = std::thread::current().id();
        let on_pool = || {
            on_compute_pool(|| {
                // A parallel op, as a training step's first.
                let sum: u64 = rayon::iter::ParallelIterator::sum(
                    rayon::iter::IntoParallelIterator::into_par_iter(0..1000u64),
                );
                (
                    rayon::current_thread_index(),
                    rayon::current_num_threads(),
                    std::thread::current().id(),
                    sum,
                )
            })
        };
        let (index, threads, thread, sum) = on_pool();
        assert_eq!(index, Some(0), "not worker 0 of a rayon pool");
        assert_eq!(thread, caller, "the command left the calling thread");
        assert_eq!(sum, 499_500);
        // A second command on the thread (as `run_args` runs them) finds its pool working.
        assert_eq!(on_pool(), (index, threads, thread, sum));
        // rayon's default size: RAYON_NUM_THREADS if set, else one thread per core.
        let want = std::env::var("RAYON_NUM_THREADS").ok().and_then(|n| n.parse().ok()).filter(|&n| n > 0);
        assert_eq!(
            threads,
            want.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        );
    }
}
