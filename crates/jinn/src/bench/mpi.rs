//! `jinn bench mpi` (cargo feature `mpi`): training throughput of `N` data-parallel ranks
//! against one rank, same per-rank batch and threads per rank, runs interleaved.
//!
//! Each run is `mpirun -np {1|N} <this jinn> train tokenizer …` on one generated dataset, with
//! validation, images and intermediate checkpoints off; its time is the one `jinn train`
//! prints (the training loop, including the final checkpoint, excluding process start-up).
//! Samples/s = steps × per-rank batch × ranks / time. The runs alternate (1, N, 1, N, …) so a
//! load change on a shared machine hits both; the speed-up is the ratio of the medians.

use super::train::generate_data;
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
        "tokenizer training ({}), per-rank batch {batch}, {} thread(s) per rank, {} steps per run, \
         {} rounds of 1 rank vs {} ranks (interleaved)",
        a.config.display(),
        a.threads,
        a.steps,
        a.rounds,
        a.ranks
    );
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..a.rounds {
        for (i, ranks) in [1, a.ranks].into_iter().enumerate() {
            let out = tmp.path().join(format!("run-{ranks}-{round}"));
            let secs = timed_run(&a, ranks, &data, &out)?;
            let rate = (a.steps as usize * batch * ranks) as f64 / secs;
            println!("  round {round}: {ranks} rank(s): {secs:.2} s, {rate:.2} samples/s");
            rates[i].push(rate);
            std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
    }
    let [one, many] = rates.map(|mut r| {
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    });
    println!(
        "median samples/s: 1 rank {one:.2}, {} ranks {many:.2}: speed-up {:.2}× (ideal {}×)",
        a.ranks,
        many / one,
        a.ranks
    );
    Ok(())
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
        .arg(out);
    for s in a.overrides.iter().cloned().chain([
        format!("train.steps={}", a.steps),
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
