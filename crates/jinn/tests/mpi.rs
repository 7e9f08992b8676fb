//! Data-parallel training under `mpirun` (cargo feature `mpi`): 2 ranks × batch 4 train like
//! 1 rank × batch 8 for every model kind (dropout, masks, noise and dead-code resets on), runs
//! resume across rank counts, and a killed or hung rank ends the run with an error. Each test prints a note and passes when `mpirun` is not installed (and fails
//! then if `JINN_REQUIRE_MPI=1`, as in CI).
#![cfg(feature = "mpi")]

mod common;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use jinn_train::checkpoint::{latest_good, step_dir_name, Checkpoint};
use jinn_world::TokenizerRunConfig;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A tiny tokenizer on 16×16 frames.
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
    let model = ckpt.load_model(cfg.model.vq().unwrap().init(&device).unwrap()).unwrap();
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

/// Per-kind test architectures: 16×16 frames, one block each, codebook dropout and dead-code
/// resets on, so every random draw and reset decision of a step is exercised.
const VQ_TOKENIZER: &str = "height = 16\nwidth = 16\npatch = 4\nmodel_dim = 16\nffn_dim = 32\nnum_heads = 2
encoder_blocks = 1\ndecoder_blocks = 1\nlatent_dim = 8\nnum_codes = 32\ncodebook_dropout = 0.2
reset_threshold = 1\n";
const MAE_TOKENIZER: &str = "kind = \"mae\"\nheight = 16\nwidth = 16\npatch = 4\nmodel_dim = 16\nffn_dim = 32
num_heads = 2\nencoder_blocks = 1\ndecoder_blocks = 1\nlatent_dim = 8\nmax_mask_ratio = 0.9\n";
const LAM: &str = "height = 16\nwidth = 16\npatch = 4\nmodel_dim = 16\nffn_dim = 32\nnum_heads = 2
encoder_blocks = 1\ndecoder_blocks = 1\nlatent_dim = 8\nnum_codes = 4\ncodebook_dropout = 0.2
reset_threshold = 1\n";
const DYNAMICS: &str = "model_dim = 16\nffn_dim = 32\nnum_heads = 2\nnum_blocks = 1\naction_dim = 8\n";

/// The `[data]` and `[train]` sections of every per-kind run (the batch is set per run).
const SCHEDULE: &str = "[data]\nseq_len = 4\nloader_threads = 0\n
[train]\nsteps = 3\nlog_every = 1\nval_every = 0\nimage_every = 0\nckpt_every = 3\n
[train.lr]\nwarmup_steps = 1\ndecay_steps = 1\nmax_lr = 3e-3\n";

/// `dir/name.toml` with `model` as its `[model]` section, `lam` (if any) as `[lam]`, and
/// [`SCHEDULE`].
fn run_config(dir: &Path, name: &str, model: &str, lam: Option<&str>) -> PathBuf {
    let lam = lam.map(|l| format!("[lam]\n{l}\n")).unwrap_or_default();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("[model]\n{model}\n{lam}{SCHEDULE}")).unwrap();
    path
}

/// Every f32 tensor of the model in the step-`step` checkpoint of `run`, sorted by name, except
/// attention key biases: softmax ignores a shift common to every key, so their gradient is zero
/// in exact arithmetic and rounding noise in floats, which AdamW's normalisation turns into
/// updates of either sign, different for any other order of the gradient sums.
fn checkpoint_tensors(run: &Path, step: u64) -> Vec<(String, Vec<f32>)> {
    let path = run.join(step_dir_name(step)).join(jinn_train::checkpoint::MODEL_FILE);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Vec<(String, Vec<f32>)> = tensors
        .tensors()
        .into_iter()
        .filter(|(name, t)| t.dtype() == safetensors::Dtype::F32 && !name.ends_with("key.bias"))
        .map(|(name, t)| {
            let values =
                t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            (name, values)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// ‖a − b‖ / ‖b‖ over every tensor of two checkpoints of the same model at `step`, and the
/// tensors that differ most (name, relative difference), for the failure message.
fn checkpoint_difference(a: &Path, b: &Path, step: u64) -> (f64, Vec<(String, f64)>) {
    let (a, b) = (checkpoint_tensors(a, step), checkpoint_tensors(b, step));
    let names = |t: &[(String, Vec<f32>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the two runs saved different tensors");
    let mut worst: Vec<(String, f64)> =
        a.iter().zip(&b).map(|((name, x), (_, y))| (name.clone(), relative_difference(x, y))).collect();
    worst.sort_by(|x, y| y.1.total_cmp(&x.1));
    worst.truncate(3);
    let flat = |t: Vec<(String, Vec<f32>)>| t.into_iter().flat_map(|(_, v)| v).collect::<Vec<f32>>();
    (relative_difference(&flat(a), &flat(b)), worst)
}

/// `jinn ARGS --out OUT` as one plain process with batch 4 and as 2 ranks with batch 2 each;
/// the models after 3 steps agree within `tol` (1e-5: only the order of the gradient sums
/// differs; 1e-8 is typical). Returns the 1-rank run.
///
/// 1e-6 is far below what a rank-dependent draw or a per-rank loss normalisation gives (≈ 1e-4
/// for MaskGIT, whose loss is a mean over a random number of masked tokens).
fn same_on_one_and_two_ranks(mpirun: &Path, dir: &Path, kind: &str, args: &[String]) -> PathBuf {
    let run = |ranks: usize, batch: usize| {
        let out = dir.join(format!("{kind}-{ranks}"));
        let mut cmd = match ranks {
            0 => Command::new(env!("CARGO_BIN_EXE_jinn")),
            n => {
                let mut c = Command::new(mpirun);
                c.args(["-np", &n.to_string(), "--oversubscribe", "--bind-to", "none"])
                    .arg(env!("CARGO_BIN_EXE_jinn"));
                c
            }
        };
        cmd.args(args)
            .args(["--out", p(&out), "--set", &format!("train.batch_size={batch}")])
            .env("RAYON_NUM_THREADS", "1")
            .env("RUST_BACKTRACE", "0")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        run_ok(cmd);
        out
    };
    let (one, two) = (run(0, 4), run(2, 2));
    let (d, worst) = checkpoint_difference(&two, &one, 3);
    eprintln!("{kind}: 2 ranks × 2 vs 1 rank × 4 after 3 steps: relative difference {d:.2e}");
    assert!(d <= 1e-6, "{kind}: relative difference {d:.2e}; most in {worst:?}");
    one
}

/// Codes reset over the logged steps of `run` (its `metrics.jsonl`).
fn codes_reset(run: &Path) -> f64 {
    let log = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["metrics"]["codes_reset"].as_f64())
        .sum()
}

#[test]
fn every_model_kind_trains_on_two_ranks_as_on_one() {
    let Some(mpirun) = mpirun() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (data, _) = setup(d);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let args = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let train = |what: &str, config: &Path, extra: &[&str]| {
        let mut a = args(&["train", what, "--config", p(config), "--data", p(&data)]);
        a.extend(args(extra));
        a
    };

    let vq = run_config(d, "vq", VQ_TOKENIZER, None);
    let tokenizer = same_on_one_and_two_ranks(&mpirun, d, "vq-tokenizer", &train("tokenizer", &vq, &[]));
    let mae = run_config(d, "mae", MAE_TOKENIZER, None);
    let mae_run = same_on_one_and_two_ranks(&mpirun, d, "mae-tokenizer", &train("mae", &mae, &[]));
    let lam = run_config(d, "lam", LAM, None);
    let lam_run = same_on_one_and_two_ranks(&mpirun, d, "lam", &train("lam", &lam, &[]));
    for run in [&tokenizer, &lam_run] {
        let resets = codes_reset(run);
        assert!(resets > 0.0, "{}: no dead code was reset, so resets went untested", run.display());
    }

    let components = |tok: &Path| args(&["--tokenizer", p(tok), "--lam", p(&lam_run)]);
    for (kind, model) in [("maskgit", "kind = \"maskgit\"\n"), ("causal", "kind = \"causal\"\n")] {
        let cfg = run_config(d, kind, &format!("{model}{DYNAMICS}"), Some(LAM));
        let mut a = train("dynamics", &cfg, &[]);
        a.extend(components(&tokenizer));
        same_on_one_and_two_ranks(&mpirun, d, kind, &a);
    }
    let cfg = run_config(
        d,
        "diffusion",
        &format!("kind = \"diffusion\"\ndenoise_steps = 4\n{DYNAMICS}"),
        Some(LAM),
    );
    let mut a = train("dynamics", &cfg, &["--kind", "diffusion"]);
    a.extend(components(&mae_run));
    same_on_one_and_two_ranks(&mpirun, d, "diffusion", &a);

    // The RSF language model (memory-free backprop) on the first 6 kB of two shipped plays.
    let corpus = common::shakespeare_excerpt(d);
    let lm_config = repo.join("configs/lm/shakespeare.toml");
    #[rustfmt::skip]
    let lm = args(&[
        "train", "lm", "--config", p(&lm_config), "--data", p(&corpus),
        "--set", "train.steps=3", "--set", "train.val_every=0", "--set", "train.ckpt_every=3",
        "--set", "train.lr.warmup_steps=1", "--set", "train.lr.decay_steps=1",
        "--set", "model.d_model=16", "--set", "model.depth=2", "--set", "model.num_heads=2",
        "--set", "model.d_ffn=32", "--set", "model.max_seq=32",
    ]);
    same_on_one_and_two_ranks(&mpirun, d, "lm", &lm);

    // The complex knowledge-graph model on the shipped Nations graph.
    let nations = repo.join("data/kg/nations");
    #[rustfmt::skip]
    let graph = args(&[
        "train", "graph", "--data", p(&nations),
        "--set", "train.steps=3", "--set", "train.val_every=0", "--set", "train.ckpt_every=3",
        "--set", "train.lr.warmup_steps=1", "--set", "train.lr.decay_steps=1", "--set", "model.dim=16",
    ]);
    same_on_one_and_two_ranks(&mpirun, d, "graph", &graph);
}
