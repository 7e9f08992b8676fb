//! `jinn bench mpi` (cargo feature `mpi`): training throughput of `N` data-parallel ranks
//! against one rank, same per-rank batch and threads per rank, runs interleaved.
//!
//! Each run is `mpirun -np {1|N} <this jinn> train tokenizer …` on one generated dataset, with
//! validation, images and intermediate checkpoints off; its time is the one `jinn train`
//! prints (the training loop, including the final checkpoint, excluding process start-up).
//! Samples/s = steps × per-rank batch × ranks / time. The runs alternate (1, N, 1, N, …) so a
//! load change on a shared machine hits both; the speed-up is the ratio of the medians.
//!
//! On a machine whose cores are busy with other work the ranks do not get a core each, so the
//! wall-clock speed-up says little; the bench therefore also prints the CPU time (user + system,
//! all processes of the run, start-up included) per sample: the ratio of 1-rank to N-rank CPU
//! time per sample is the parallel efficiency the ranks would reach on free cores (1 = no
//! overhead from the all-reduces and the duplicated work).

use super::train::generate_data;
use crate::device::check_for_ranks;
use anyhow::{bail, Context};
use jinn_world::TokenizerRunConfig;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `jinn bench mpi`.
#[derive(clap::Args)]
pub struct MpiBenchArgs {
    /// Tokenizer run config.
    #[arg(long, default_value = "configs/jasmine-small/tokenizer.toml")]
    pub config: PathBuf,
    /// Override a config value, e.g. `--set train.batch_size=4` (the per-rank batch; repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Ranks of the data-parallel runs (compared with 1 rank).
    #[arg(long, default_value_t = 2)]
    pub ranks: usize,
    /// Compute threads per rank (`RAYON_NUM_THREADS`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Training steps per run.
    #[arg(long, default_value_t = 20)]
    pub steps: u64,
    /// Runs of each kind (alternating).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// The MPI launcher (OpenMPI's `mpirun`: the flags passed are OpenMPI's).
    #[arg(long, default_value = "mpirun")]
    pub mpirun: PathBuf,
    /// Compute device of every rank, as `jinn train --device` takes it; passed to the ranks as
    /// written, so `wgpu:local` gives each rank the GPU of its local rank.
    #[arg(long, value_name = "DEVICE", default_value = "cpu", value_parser = device_as_written)]
    pub device: String,
}

/// A `--device` value, checked by the one parser and kept as written (`local` is resolved by
/// each rank, not here).
fn device_as_written(s: &str) -> Result<String, String> {
    check_for_ranks(s).map(|()| s.to_string())
}

/// Generate the data, run the interleaved rounds and print samples/s and the speed-up.
pub fn run(a: MpiBenchArgs) -> anyhow::Result<()> {
    if a.ranks < 2 || a.threads == 0 || a.steps == 0 || a.rounds == 0 {
        bail!("--ranks must be ≥ 2 and --threads, --steps, --rounds ≥ 1");
    }
    let cfg: TokenizerRunConfig = jinn_train::config::load(Some(&a.config), &a.overrides)?;
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    generate_data(&cfg, &data)?;
    let batch = cfg.train.batch_size;
    println!(
        "tokenizer training ({}) on {}, per-rank batch {batch}, {} thread(s) per rank, {} steps per run, \
         {} rounds of 1 rank vs {} ranks (interleaved)",
        a.config.display(),
        a.device,
        a.threads,
        a.steps,
        a.rounds,
        a.ranks
    );
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut cpu_per_sample: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..a.rounds {
        for (i, ranks) in [1, a.ranks].into_iter().enumerate() {
            let out = tmp.path().join(format!("run-{ranks}-{round}"));
            let cpu_before = children_cpu_secs();
            let secs = timed_run(&a, ranks, &data, &out)?;
            let cpu = children_cpu_secs() - cpu_before;
            let samples = (a.steps as usize * batch * ranks) as f64;
            println!(
                "  round {round}: {ranks} rank(s): {secs:.2} s, {:.2} samples/s, {:.3} CPU s/sample",
                samples / secs,
                cpu / samples
            );
            rates[i].push(samples / secs);
            cpu_per_sample[i].push(cpu / samples);
            std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
    }
    let [one, many] = rates.map(median);
    let [cpu_one, cpu_many] = cpu_per_sample.map(median);
    println!(
        "median samples/s: 1 rank {one:.2}, {} ranks {many:.2}: speed-up {:.2}× (ideal {}×)",
        a.ranks,
        many / one,
        a.ranks
    );
    println!(
        "median CPU s/sample: 1 rank {cpu_one:.3}, {} ranks {cpu_many:.3}: parallel efficiency {:.2} \
         (speed-up on {} free cores ≈ {:.2}×)",
        a.ranks,
        cpu_one / cpu_many,
        a.ranks,
        a.ranks as f64 * cpu_one / cpu_many
    );
    Ok(())
}

/// The middle value (upper middle for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// User + system CPU seconds of this process's waited-for children so far.
fn children_cpu_secs() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Run `mpirun -np ranks jinn train tokenizer …` into `out` and return the training time the
/// run printed (`steps 0..S in X s`).
fn timed_run(a: &MpiBenchArgs, ranks: usize, data: &Path, out: &Path) -> anyhow::Result<f64> {
    let exe = std::env::current_exe().context("locating the jinn executable")?;
    let mut cmd = Command::new(&a.mpirun);
    cmd.args(["-np", &ranks.to_string(), "--oversubscribe", "--bind-to", "none", "-x", "RAYON_NUM_THREADS"])
        .arg(exe)
        .args(["train", "tokenizer", "--config"])
        .arg(&a.config)
        .arg("--data")
        .arg(data)
        .arg("--out")
        .arg(out)
        .args(["--device", &a.device])
        .args(["--stop-at", &a.steps.to_string()]); // the config's schedule stays as it is
    for s in a.overrides.iter().cloned().chain([
        format!("train.log_every={}", a.steps),
        "train.val_every=0".into(),
        "train.image_every=0".into(),
        "train.ckpt_every=0".into(),
    ]) {
        cmd.args(["--set", &s]);
    }
    cmd.env("RAYON_NUM_THREADS", a.threads.to_string());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let output = cmd.output().with_context(|| format!("starting {}", a.mpirun.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{ranks}-rank run failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("steps ")?.split(" in ").nth(1)?.split(" s").next()?.parse::<f64>().ok())
        .with_context(|| format!("no `steps a..b in X s` line in the {ranks}-rank run's output:\n{stdout}"))
}
