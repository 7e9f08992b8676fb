//! Data-parallel training under `mpirun` (cargo feature `mpi`): 2 ranks × batch 4 train like
//! 1 rank × batch 8, runs resume across rank counts, and a killed or hung rank ends the run with
//! an error. Each test prints a note and passes when `mpirun` is not installed (and fails
//! then if `JINN_REQUIRE_MPI=1`, as in CI).
#![cfg(feature = "mpi")]

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use jinn_train::checkpoint::{latest_good, step_dir_name, Checkpoint};
use jinn_world::TokenizerRunConfig;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A tiny tokenizer on 16×16 frames without codebook dropout (the only randomness inside a
/// step, drawn per rank), so that runs on different rank counts see identical computations.
const CONFIG: &str = r#"
[model]
height = 16
width = 16
patch = 4
model_dim = 16
ffn_dim = 32
num_heads = 2
encoder_blocks = 1
decoder_blocks = 1
latent_dim = 8
num_codes = 32
codebook_dropout = 0.0

[data]
seq_len = 4
loader_threads = 0

[train]
steps = 4
batch_size = 8
log_every = 1
val_every = 0
image_every = 0
ckpt_every = 2
keep_last = 5

[train.lr]
warmup_steps = 1
decay_steps = 1
max_lr = 3e-3
"#;

/// `mpirun` on the PATH, or `None` after printing why the test is skipped.
fn mpirun() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("mpirun")).find(|p| p.is_file()));
    if found.is_none() {
        assert!(
            std::env::var("JINN_REQUIRE_MPI").as_deref() != Ok("1"),
            "JINN_REQUIRE_MPI=1 but no mpirun on PATH"
        );
        eprintln!("NOTE: mpirun not found on PATH; skipping the MPI test (install openmpi-bin)");
    }
    found
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The tiny dataset and config in `dir`; returns (data, config).
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let data = dir.join("ds");
    let o = Command::new(env!("CARGO_BIN_EXE_jinn"))
        .args(["data", "gen", "--env", "breakout", "--episodes", "6", "--size", "16x16"])
        .args(["--min-episode-len", "12", "--max-episode-len", "12", "--chunk-len", "12"])
        .args(["--val-fraction", "0", "--test-fraction", "0", "--out", p(&data)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let config = dir.join("tok.toml");
    std::fs::write(&config, CONFIG).unwrap();
    (data, config)
}

/// `jinn train tokenizer` into `out`: under `mpirun -np ranks`, or a plain process when
/// `ranks` is 0.
fn train(mpirun: &Path, ranks: usize, data: &Path, config: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut cmd = match ranks {
        0 => Command::new(env!("CARGO_BIN_EXE_jinn")),
        n => {
            let mut c = Command::new(mpirun);
            c.args(["-np", &n.to_string(), "--oversubscribe", "--bind-to", "none"])
                .arg(env!("CARGO_BIN_EXE_jinn"));
            c
        }
    };
    cmd.args(["train", "tokenizer", "--config", p(config), "--data", p(data), "--out", p(out)])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

fn run_ok(mut cmd: Command) -> String {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?} failed:\n{}", text(&o));
    text(&o)
}

/// Every parameter value of the tokenizer in the checkpoint of `step` in `run`.
fn params(run: &Path, config: &Path, step: u64) -> Vec<f32> {
    let cfg: TokenizerRunConfig = jinn_train::config::load(Some(config), &[]).unwrap();
    let device = Device::flex();
    let ckpt = Checkpoint::open(&run.join(step_dir_name(step))).unwrap();
    let model = ckpt.load_model(cfg.model.init(&device).unwrap()).unwrap();
    struct Values(Vec<f32>);
    impl ModuleVisitor for Values {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            self.0.extend(p.val().into_data().try_to_vec::<f32>().unwrap());
        }
    }
    let mut v = Values(Vec::new());
    model.visit(&mut v);
    v.0
}

/// ‖a − b‖ / ‖b‖ over all parameters.
fn relative_difference(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let d: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum();
    let n: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (d / n).sqrt()
}

#[test]
fn two_ranks_of_batch_4_train_like_one_rank_of_batch_8_and_resume_across_rank_counts() {
    let Some(mpirun) = mpirun() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, config) = setup(dir.path());
    let batch = |b: usize| format!("train.batch_size={b}");
    let (b4, b8) = (batch(4), batch(8));

    // Reference: one plain process, batch 8.
    let one = dir.path().join("one");
    run_ok(train(&mpirun, 0, &data, &config, &one, &["--set", &b8]));
    // Two ranks × batch 4 under mpirun.
    let two = dir.path().join("two");
    let log = run_ok(train(&mpirun, 2, &data, &config, &two, &["--set", &b4]));
    assert!(log.contains("global batch = 4 per rank × 2 ranks = 8"), "{log}");
    let reference = params(&one, &config, 4);
    assert_ne!(reference, params(&one, &config, 2), "the parameters must move between steps");
    let d = relative_difference(&params(&two, &config, 4), &reference);
    eprintln!("2 ranks × 4 vs 1 rank × 8 after 4 steps: relative difference {d:.2e}");
    assert!(d <= 1e-5, "relative difference {d:.2e}");
    // Rank 0 alone wrote the metrics: one train record per step.
    let metrics = std::fs::read_to_string(two.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 4, "{metrics}");

    // 2 ranks → 1: two ranks stop at step 2, one plain process resumes with batch 8.
    let down = dir.path().join("down");
    run_ok(train(&mpirun, 2, &data, &config, &down, &["--set", &b4, "--stop-at", "2"]));
    let log = run_ok(train(&mpirun, 0, &data, &config, &down, &["--set", &b8, "--resume"]));
    assert!(log.contains("steps 2..4"), "{log}");
    let d = relative_difference(&params(&down, &config, 4), &reference);
    eprintln!("2 → 1 rank resume vs 1 rank: relative difference {d:.2e}");
    assert!(d <= 1e-5, "2 → 1 resume: relative difference {d:.2e}");

    // 1 → 2: one process stops at step 2, two ranks resume with batch 4 each.
    let up = dir.path().join("up");
    run_ok(train(&mpirun, 0, &data, &config, &up, &["--set", &b8, "--stop-at", "2"]));
    let log = run_ok(train(&mpirun, 2, &data, &config, &up, &["--set", &b4, "--resume"]));
    assert!(log.contains("steps 2..4"), "{log}");
    let d = relative_difference(&params(&up, &config, 4), &reference);
    eprintln!("1 → 2 rank resume vs 1 rank: relative difference {d:.2e}");
    assert!(d <= 1e-5, "1 → 2 resume: relative difference {d:.2e}");
}

/// An `mpirun` job that is killed when dropped (a failing test leaves nothing running).
struct Job {
    child: Child,
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pid of rank `rank` among the children of the `mpirun` process `parent`.
fn rank_pid(parent: u32, rank: usize) -> Option<i32> {
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()).find(|pid| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        env.split(|&b| b == 0).any(|kv| kv == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
    })
}

/// Start a long 2-rank run into `out`, wait for its first checkpoint, send `signal` to rank 1,
/// and return how the job ended, its output, and how long it took to end after the signal.
fn signal_rank_one(mpirun: &Path, dir: &Path, out: &Path, signal: i32) -> (bool, String, Duration) {
    let (data, config) = setup(dir);
    let log = dir.join(format!("{signal}.log"));
    let mut cmd = train(
        mpirun,
        2,
        &data,
        &config,
        out,
        &["--set", "train.steps=1000000", "--set", "train.batch_size=2"],
    );
    cmd.env("JINN_MPI_TIMEOUT_SECS", "3")
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(dir.join(format!("{signal}.err"))).unwrap()));
    let mut job = Job { child: cmd.spawn().unwrap() };
    let started = Instant::now();
    while !out.join(step_dir_name(2)).is_dir() {
        assert!(job.child.try_wait().unwrap().is_none(), "the run ended before its first checkpoint");
        assert!(started.elapsed() < Duration::from_secs(120), "no checkpoint within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let victim = rank_pid(job.child.id(), 1).expect("rank 1 among mpirun's children");
    // SAFETY: kill(2) on a process this test started.
    assert_eq!(unsafe { libc::kill(victim, signal) }, 0);
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = job.child.try_wait().unwrap() {
            break status;
        }
        assert!(signalled.elapsed() < Duration::from_secs(90), "the job still runs 90 s after the signal");
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = signalled.elapsed();
    // SAFETY: as above; the stopped rank may outlive mpirun.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let output = std::fs::read_to_string(&log).unwrap()
        + &std::fs::read_to_string(dir.join(format!("{signal}.err"))).unwrap();
    (status.success(), output, took)
}

/// The newest checkpoint of `out` verifies, and none was skipped as corrupt.
fn last_checkpoint_intact(out: &Path) {
    let found = latest_good(out).unwrap();
    assert!(found.checkpoint.is_some(), "no good checkpoint in {}", out.display());
    assert!(found.skipped.is_empty(), "corrupt checkpoints: {:?}", found.skipped);
}

#[test]
fn a_killed_or_hung_rank_ends_the_run_with_an_error() {
    let Some(mpirun) = mpirun() else { return };
    let dir = tempfile::tempdir().unwrap();

    // Killed: mpirun notices the dead rank and ends the job.
    let out = dir.path().join("killed");
    let (ok, output, took) = signal_rank_one(&mpirun, &dir.path().join("a"), &out, libc::SIGKILL);
    eprintln!("killed rank: job ended after {took:.1?}");
    assert!(!ok, "the job must fail:\n{output}");
    last_checkpoint_intact(&out);

    // Hung (stopped): rank 0's all-reduce times out after 3 s and aborts the job.
    let out = dir.path().join("hung");
    let (ok, output, took) = signal_rank_one(&mpirun, &dir.path().join("b"), &out, libc::SIGSTOP);
    eprintln!("hung rank: job ended after {took:.1?}");
    assert!(!ok, "the job must fail:\n{output}");
    assert!(output.contains("got no answer from every rank within 3 s"), "{output}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    last_checkpoint_intact(&out);
}
