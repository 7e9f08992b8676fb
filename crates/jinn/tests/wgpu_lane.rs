//! The software-GPU lane: the same runs on `--device wgpu:cpu` (a software Vulkan adapter,
//! Mesa's lavapipe in CI) and on the CPU agree — every model kind's first training steps, a
//! checkpoint moved between the two, a MaskGIT rollout, and the play API served from wgpu.
//!
//! Built only with `--features wgpu` (`cargo test -p jinn --features wgpu --test wgpu_lane`).
//! Without a Vulkan driver the tests skip, saying so, unless `JINN_REQUIRE_GPU=1` (CI), where
//! they fail.
//!
//! The world models' commands run in this process ([`jinn::run_args`]): they share one wgpu
//! device, so each kernel is compiled (by cubecl and by the driver) once for all of them rather
//! than once per command. One device compiles one kernel at a time, so the language and graph
//! models, whose kernels are their own, run as `jinn` processes beside them and keep the second
//! core busy; the play API is served by a `jinn play` process.
//!
//! Tolerances: a seed draws the same parameters on every device (they are drawn on the host),
//! so the first step's loss agrees to float rounding (relative 1e-4); after a few updates the
//! two devices' different summation orders leave the losses within a relative 2e-2.
#![cfg(feature = "wgpu")]

mod common;

use common::PlayServer;
use std::path::{Path, PathBuf};

const GPU: &str = "wgpu:cpu";
/// Relative agreement of the first step's loss (same parameters, same batch).
const FIRST_STEP_RTOL: f64 = 1e-4;
/// Relative agreement of the losses after a few updates.
const LATER_STEP_RTOL: f64 = 2e-2;

/// Where a command runs.
#[derive(Clone, Copy)]
enum Run {
    /// In this process, on its wgpu device.
    Here,
    /// In a `jinn` process of its own.
    Child,
}

/// Runs the command line `args` `where_`; it must succeed.
fn ok_in(where_: Run, args: &[String]) {
    match where_ {
        Run::Here => {
            if let Err(e) = jinn::run_args(args) {
                panic!("jinn {}: {e:#}", args.join(" "));
            }
        }
        Run::Child => {
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_jinn"))
                .args(args)
                .env("RUST_BACKTRACE", "0")
                .output()
                .expect("run jinn");
            let text =
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert!(o.status.success(), "jinn {}:\n{text}", args.join(" "));
        }
    }
}

/// Runs the command line `args` in this process; it must succeed.
fn ok(args: &[String]) {
    ok_in(Run::Here, args);
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether a software wgpu adapter (lavapipe) comes up in this process. `false` (after
/// saying why) when it does not, unless `JINN_REQUIRE_GPU=1`, where that fails the test.
fn gpu_available() -> bool {
    use burn::tensor::{Device, DeviceKind, Tensor};
    let up = std::panic::catch_unwind(|| {
        Tensor::<1>::ones([4], &Device::wgpu(DeviceKind::Cpu)).sum().into_scalar::<f32>()
    });
    if up.is_ok_and(|v| v == 4.0) {
        return true;
    }
    assert_ne!(
        std::env::var("JINN_REQUIRE_GPU").as_deref(),
        Ok("1"),
        "JINN_REQUIRE_GPU=1 but no software wgpu adapter ({GPU}) comes up (install mesa-vulkan-drivers \
         and libvulkan1)"
    );
    eprintln!("SKIPPED: no software wgpu adapter ({GPU}) comes up here");
    false
}

/// A 32×32 breakout dataset of a few short episodes.
fn dataset(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    #[rustfmt::skip]
    ok(&strings(&["data", "gen", "--episodes", "6", "--size", "32x32", "--out", &p(&data),
                  "--val-fraction", "0.2", "--test-fraction", "0.0",
                  "--min-episode-len", "40", "--max-episode-len", "60"]));
    data
}

/// `--set` flags for `steps` steps logged every step, checkpointed at the end.
fn schedule(steps: usize) -> Vec<String> {
    let sets = [
        format!("train.steps={steps}"),
        "train.log_every=1".into(),
        "train.lr.warmup_steps=0".into(),
        "train.lr.decay_steps=0".into(),
        format!("train.ckpt_every={steps}"),
        format!("train.val_every={}", steps.max(1000)),
        "train.image_every=0".into(),
        "train.batch_size=2".into(),
        // One rank on both devices (the demo's dynamics config trains two thread ranks on the
        // CPU, whose logged loss averages per-rank means rather than pooling the tokens).
        "train.local_ranks=1".into(),
    ];
    sets.into_iter().flat_map(|s| ["--set".to_string(), s]).collect()
}

fn world_sets(sets: &[&str]) -> Vec<String> {
    sets.iter().flat_map(|s| ["--set".to_string(), s.to_string()]).collect()
}

/// The demo VQ tokenizer shrunk to 32×32 frames.
fn tokenizer_args(data: &Path, out: &Path, steps: usize) -> Vec<String> {
    let config = repo().join("configs/demo/tokenizer.toml");
    let mut args =
        strings(&["train", "tokenizer", "--config", &p(&config), "--data", &p(data), "--out", &p(out)]);
    #[rustfmt::skip]
    args.extend(world_sets(&[
        "model.height=32", "model.width=32", "model.patch=8", "model.model_dim=16", "model.ffn_dim=32",
        "model.num_heads=2", "model.encoder_blocks=1", "model.decoder_blocks=1", "model.num_codes=32",
        "data.seq_len=3",
    ]));
    args.extend(schedule(steps));
    args
}

/// The training losses of a run's metrics.jsonl, by step.
fn losses(run: &Path) -> Vec<(u64, f64)> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["split"] == "train")
        .map(|v| (v["step"].as_u64().unwrap(), v["metrics"]["loss"].as_f64().unwrap()))
        .collect()
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-12)
}

/// Where [`trains_alike`] trains `name` on `device`.
fn run_dir(dir: &Path, name: &str, device: &str) -> PathBuf {
    dir.join(format!("{name}-{}", device.replace(':', "-")))
}

/// Train `args` on the CPU and on the GPU into [`run_dir`]s; the losses must agree. The CPU run.
fn trains_alike(dir: &Path, name: &str, args: &dyn Fn(&Path) -> Vec<String>) -> PathBuf {
    trains_alike_in(Run::Here, dir, name, args)
}

/// [`trains_alike`] with the runs `where_`.
fn trains_alike_in(where_: Run, dir: &Path, name: &str, args: &dyn Fn(&Path) -> Vec<String>) -> PathBuf {
    let runs = ["cpu", GPU].map(|device| {
        let out = run_dir(dir, name, device);
        let mut a = args(&out);
        a.extend(strings(&["--device", device]));
        ok_in(where_, &a);
        out
    });
    let (cpu, gpu) = (losses(&runs[0]), losses(&runs[1]));
    eprintln!("{name}: cpu {cpu:?}\n{name}: gpu {gpu:?}");
    assert_eq!(cpu.len(), gpu.len(), "{name}: both runs log every step");
    assert!(!cpu.is_empty(), "{name}: no training losses logged");
    for (i, (&(step, a), &(_, b))) in cpu.iter().zip(&gpu).enumerate() {
        let tol = if i == 0 { FIRST_STEP_RTOL } else { LATER_STEP_RTOL };
        assert!(relative(a, b) <= tol, "{name} step {step}: loss {a} on the CPU, {b} on {GPU} (rtol {tol})");
    }
    runs[0].clone()
}

/// The value of a scoped thread, or its panic passed on.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The tiny demo MAE tokenizer or LAM config (`file` in configs/demo, `task` tokenizer or lam).
fn small_model_args(task: &str, file: &str, data: &Path, out: &Path) -> Vec<String> {
    let config = repo().join("configs/demo").join(file);
    let mut a = strings(&["train", task, "--config", &p(&config), "--data", &p(data), "--out", &p(out)]);
    #[rustfmt::skip]
    a.extend(world_sets(&[
        "model.height=32", "model.width=32", "model.patch=8", "model.model_dim=16", "model.ffn_dim=32",
        "model.num_heads=2", "model.encoder_blocks=1", "model.decoder_blocks=1", "data.seq_len=3",
    ]));
    a.extend(schedule(3));
    a
}

/// Dynamics of `kind` on `tokenizer` with the recorded actions, tiny, 3 steps.
fn dynamics_args(kind: &str, tokenizer: &Path, data: &Path, out: &Path) -> Vec<String> {
    let file = if kind == "diffusion" { "dynamics-diffusion.toml" } else { "dynamics.toml" };
    let config = repo().join("configs/demo").join(file);
    #[rustfmt::skip]
    let mut a = strings(&[
        "train", "dynamics", "--config", &p(&config), "--data", &p(data), "--tokenizer", &p(tokenizer),
        "--actions", "gt", "--kind", kind, "--out", &p(out),
    ]);
    let mut sets = vec!["model.model_dim=16", "model.ffn_dim=32", "model.num_heads=2", "data.seq_len=3"];
    if kind != "maskgit" {
        // The demo config's MaskGIT-only settings, back to their defaults.
        #[rustfmt::skip]
        sets.extend([
            "model.previous_frame_input=false", "model.previous_frame_radius=0", "model.mask_ratio_per_frame=false",
        ]);
    }
    a.extend(world_sets(&sets));
    a.extend(schedule(3));
    a
}

/// The tokenizer's runs for [`trains_alike`]: 4 steps, checkpointed at step 2 as well.
fn tokenizer_run_args(data: &Path, out: &Path) -> Vec<String> {
    [tokenizer_args(data, out, 4), strings(&["--set", "train.ckpt_every=2"])].concat()
}

/// A checkpoint written on wgpu resumes on the CPU (and the other way round) and continues as
/// the run that stayed on the CPU. `cpu` and `gpu` are the tokenizer's runs of
/// [`tokenizer_run_args`] on each device; each resume starts from the other's step-2 checkpoint.
/// The resume on wgpu comes after the wgpu run, so its kernels are in the driver's cache.
fn checkpoints_move_between_devices(dir: &Path, data: &Path, cpu: &Path, gpu: &Path) {
    let step_2 = jinn_train::checkpoint::step_dir_name(2);
    for (first, written_by, second) in [(GPU, gpu, "cpu"), ("cpu", cpu, GPU)] {
        let out = dir.join(format!("resume-{}-then-{}", first.replace(':', "-"), second.replace(':', "-")));
        copy_dir(&written_by.join(&step_2), &out.join(&step_2));
        ok(&[tokenizer_args(data, &out, 4), strings(&["--device", second, "--resume"])].concat());
        let (a, b) = (losses(cpu), losses(&out));
        let (&(step, x), &(_, y)) = (a.last().unwrap(), b.last().unwrap());
        assert_eq!(step, 4);
        assert!(
            relative(x, y) <= LATER_STEP_RTOL,
            "{first} then {second}: step-4 loss {y}, all on the CPU {x}"
        );
    }
}

/// A copy of the directory `from` (files only, one level deep: a checkpoint) at `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Runs that do not depend on each other start together: the device compiles one kernel at a
/// time, but the CPU runs and each run's host work go on beside it.
#[test]
fn every_world_model_kind_trains_on_wgpu_as_on_the_cpu_and_checkpoints_move_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if !gpu_available() {
        return;
    }
    let data = dataset(dir);
    let data = &data;
    let (tok, mae) = std::thread::scope(|s| {
        let tok = s.spawn(|| {
            let cpu = trains_alike(dir, "tokenizer", &|out| tokenizer_run_args(data, out));
            checkpoints_move_between_devices(dir, data, &cpu, &run_dir(dir, "tokenizer", GPU));
            cpu
        });
        let mae = s.spawn(|| {
            trains_alike(dir, "mae", &|out| small_model_args("tokenizer", "tokenizer-mae.toml", data, out))
        });
        let lam = s.spawn(|| trains_alike(dir, "lam", &|out| small_model_args("lam", "lam.toml", data, out)));
        joined(lam);
        (joined(tok), joined(mae))
    });
    let [maskgit, causal, diffusion] = std::thread::scope(|s| {
        let runs = [("maskgit", &tok), ("causal", &tok), ("diffusion", &mae)].map(|(kind, tokenizer)| {
            s.spawn(move || trains_alike(dir, kind, &|out| dynamics_args(kind, tokenizer, data, out)))
        });
        runs.map(joined)
    });
    std::thread::scope(|s| {
        let samples = [("maskgit", &maskgit), ("causal", &causal), ("diffusion", &diffusion)]
            .map(|(name, run)| s.spawn(move || samples_alike(dir, name, run, data)));
        serves_from_wgpu(&maskgit, data);
        for sample in samples {
            joined(sample);
        }
    });
}

/// `jinn sample` of a dynamics model (argmax, 2 context + 3 generated frames; diffusion with its
/// host-seeded noise) on both devices: the rollouts' per-frame PSNR against the ground truth
/// agree within 0.5 dB (near-tied tokens may flip between devices).
fn samples_alike(dir: &Path, name: &str, run: &Path, data: &Path) {
    let psnr = |device: &str| -> Vec<f64> {
        let out = dir.join(format!("sample-{name}-{}", device.replace(':', "-")));
        #[rustfmt::skip]
        ok(&strings(&["sample", "--ckpt", &p(run), "--data", &p(data), "--context", "2", "--frames", "3",
                      "--actions", "gt", "--argmax", "--out", &p(&out), "--device", device]));
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
        m["per_frame"].as_array().unwrap().iter().map(|f| f["psnr"].as_f64().unwrap()).collect()
    };
    let (cpu, gpu) = (psnr("cpu"), psnr(GPU));
    eprintln!("{name} sample PSNR per frame: cpu {cpu:?}, gpu {gpu:?}");
    assert_eq!(cpu.len(), gpu.len());
    for (a, b) in cpu.iter().zip(&gpu) {
        assert!((a - b).abs() < 0.5, "{name} rollout PSNR {a} dB on the CPU, {b} dB on {GPU}");
    }
}

/// `jinn play --device wgpu:cpu`: a session starts and steps over a real socket.
fn serves_from_wgpu(run: &Path, data: &Path) {
    let server = PlayServer::start(run, data, &["--maskgit-steps", "2", "--device", GPU]);
    let (status, created) =
        server.post("/v1/world/sessions", r#"{"dataset": {"split": "val", "episode": 0}}"#);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    for action in [1, 2] {
        let (status, reply) =
            server.post(&format!("/v1/world/sessions/{id}/step"), &format!(r#"{{"action": {action}}}"#));
        assert_eq!(status, 200, "{reply}");
        assert!(reply["frame"].as_str().is_some_and(|f| !f.is_empty()), "{reply}");
    }
}

#[test]
fn the_language_and_graph_models_train_on_wgpu_as_on_the_cpu() {
    if !gpu_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let corpus = common::shakespeare_excerpt(dir);
    let config = repo().join("configs/lm/shakespeare.toml");
    // The RSF-LM with memory-free backprop (the config's `backprop = "reconstruct"`).
    trains_alike_in(Run::Child, dir, "lm", &|out| {
        let mut a =
            strings(&["lm", "train", "--config", &p(&config), "--data", &p(&corpus), "--out", &p(out)]);
        #[rustfmt::skip]
        a.extend(world_sets(&[
            "model.d_model=16", "model.depth=2", "model.num_heads=2", "model.d_ffn=32", "model.max_seq=32",
        ]));
        a.extend(schedule(3));
        a
    });
    let nations = repo().join("data/kg/nations");
    trains_alike_in(Run::Child, dir, "graph", &|out| {
        let mut a = strings(&["graph", "train", "--data", &p(&nations), "--out", &p(out)]);
        a.extend(world_sets(&["model.dim=16"]));
        // 2 steps: the graph model's second and third steps each compile new kernels (about 25 s
        // on lavapipe, cold), and the second step already checks an update.
        a.extend(schedule(2));
        a
    });
}

#[test]
fn bf16_on_an_adapter_without_it_is_a_clear_error() {
    if !gpu_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let mut args = tokenizer_args(&data, &dir.path().join("bf16"), 1);
    args.extend(strings(&["--device", GPU, "--set", "train.precision=bf16"]));
    let result = jinn::run_args(&args);
    if burn::tensor::Device::wgpu(burn::tensor::DeviceKind::Cpu).supports_dtype(burn::tensor::DType::BF16) {
        assert!(result.is_ok(), "{result:?}");
    } else {
        let err = format!("{:#}", result.expect_err("bf16 ran on an adapter without it"));
        assert!(err.contains("train.precision") && err.contains("f32"), "{err}");
    }
}
