//! End-to-end world-model CLI: `jinn demo` (data → tokenizer → LAM → dynamics → sample) with
//! tiny models, stage reuse on a second run, `jinn sample` with an action file, and clear
//! errors for bad inputs and corrupt checkpoints.

use std::path::Path;
use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn demo(out: &Path) -> Output {
    let out = out.to_str().unwrap();
    #[rustfmt::skip]
    let args = [
        "demo", "--out", out, "--episodes", "6", "--steps", "2", "--frames", "2",
        "--set", "all:train.batch_size=2", "--set", "all:train.val_batches=1",
        "--set", "all:model.model_dim=16", "--set", "all:model.ffn_dim=32", "--set", "all:model.num_heads=2",
    ];
    jinn(&args)
}

fn per_frame(metrics: &Path) -> Vec<serde_json::Value> {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(metrics).unwrap()).unwrap();
    json["per_frame"].as_array().unwrap().clone()
}

#[test]
fn demo_trains_samples_and_reuses_finished_stages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = demo(&out);
    assert!(o.status.success(), "{}", text(&o));
    let log = text(&o);
    assert!(log.contains("play it: jinn play --ckpt"), "{log}");
    assert!(out.join("sample/rollout.gif").is_file());
    let frames = per_frame(&out.join("sample/metrics.json"));
    assert_eq!(frames.len(), 2);
    for f in &frames {
        assert!(f["psnr"].as_f64().unwrap().is_finite() && f["ssim"].as_f64().unwrap().is_finite());
    }
    for stage in ["tokenizer", "lam", "dynamics"] {
        assert!(out.join(stage).join("step_000002").is_dir(), "{stage}");
    }

    // Second run: every stage is reused, nothing retrained.
    let o = demo(&out);
    assert!(o.status.success(), "{}", text(&o));
    let log = text(&o);
    assert_eq!(log.matches("reusing").count(), 4, "data + 3 stages: {log}");
    assert!(!log.contains("training 2 steps"), "{log}");

    // `jinn sample` with an action file of LAM codes.
    let actions = dir.path().join("actions.txt");
    std::fs::write(&actions, "0 1, 2\n3").unwrap();
    let s = |acts: &str, sample_out: &str| {
        let ckpt = out.join("dynamics");
        let data = out.join("data");
        let sample_out = dir.path().join(sample_out);
        #[rustfmt::skip]
        let o = jinn(&[
            "sample", "--ckpt", ckpt.to_str().unwrap(), "--data", data.to_str().unwrap(),
            "--context", "1", "--frames", "3", "--steps", "3", "--actions", acts,
            "--out", sample_out.to_str().unwrap(),
        ]);
        (o, sample_out)
    };
    let (o, sample_out) = s(actions.to_str().unwrap(), "s1");
    assert!(o.status.success(), "{}", text(&o));
    let frames = per_frame(&sample_out.join("metrics.json"));
    let labels: Vec<i64> = frames.iter().map(|f| f["action"].as_i64().unwrap()).collect();
    assert_eq!(labels, [0, 1, 2], "the file's actions drive transitions into frames 1..3");
    assert!(sample_out.join("rollout.gif").is_file());

    // Bad action inputs are named.
    std::fs::write(&actions, "0 9 1").unwrap();
    let (o, _) = s(actions.to_str().unwrap(), "s2");
    assert!(!o.status.success() && text(&o).contains("out of range"), "{}", text(&o));
    let (o, _) = s("gt", "s3");
    assert!(!o.status.success() && text(&o).contains("--actions gt"), "{}", text(&o));

    // A corrupt dynamics checkpoint gives a clear error naming the run.
    std::fs::write(out.join("dynamics/step_000002/model.safetensors"), b"not a checkpoint").unwrap();
    let (o, _) = s("lam", "s4");
    let log = text(&o);
    assert!(!o.status.success(), "{log}");
    assert!(log.contains("dynamics") && log.contains("checkpoint"), "{log}");
}
