//! End-to-end world-model CLI: `jinn demo` (data → tokenizer → LAM → dynamics → sample) with
//! tiny models, stage reuse on a second run, `jinn sample` with an action file, and clear
//! errors for bad inputs and corrupt checkpoints.

mod common;

use common::PlayServer;
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
        "demo", "--out", out, "--episodes", "6", "--steps", "2", "--frames", "2", "--eval-episodes", "2",
        "--set", "all:train.batch_size=2", "--set", "all:train.val_batches=1",
        "--set", "all:model.model_dim=16", "--set", "all:model.ffn_dim=32", "--set", "all:model.num_heads=2",
    ];
    jinn(&args)
}

/// Start `jinn play` on `run`, drive its API, stop it.
fn play_serves_the_model(run: &Path, data: &Path) {
    let server = PlayServer::start(run, data, &["--maskgit-steps", "2", "--device", "cpu"]);
    let (status, created) =
        server.post("/v1/world/sessions", r#"{"dataset": {"split": "val", "episode": 0, "frame": 0}}"#);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    for action in [0, 1] {
        let (status, reply) =
            server.post(&format!("/v1/world/sessions/{id}/step"), &format!(r#"{{"action": {action}}}"#));
        assert_eq!(status, 200, "{reply}");
        let png = base64_decode(reply["frame"].as_str().unwrap());
        let img = image::load_from_memory(&png).unwrap();
        assert_eq!((img.width(), img.height()), (64, 64));
    }
    let (status, reply) = server.post(&format!("/v1/world/sessions/{id}/step"), r#"{"action": 6}"#);
    assert_eq!(status, 400, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("unknown action"), "{reply}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn per_frame(metrics: &Path) -> Vec<serde_json::Value> {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(metrics).unwrap()).unwrap();
    json["per_frame"].as_array().unwrap().clone()
}

/// The `metrics` object of a `jinn eval world` metrics.json.
fn eval_metrics(path: &Path) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json["metrics"].clone()
}

/// `jinn eval world` on the demo's model: consistent metrics.json; clear errors.
fn eval_world_writes_metrics_and_names_bad_inputs(demo: &Path, tmp: &Path) {
    let (ckpt, data) = (demo.join("dynamics"), demo.join("data"));
    let eval_out = tmp.join("eval-world");
    let run = |extra: &[&str]| {
        #[rustfmt::skip]
        let mut args = vec![
            "eval", "world", "--ckpt", ckpt.to_str().unwrap(), "--data", data.to_str().unwrap(),
            "--episodes", "3", "--nmi-clips", "5", "--batch-size", "2", "--frames", "2",
            "--steps", "2", "--out", eval_out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        jinn(&args)
    };
    let o = run(&[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("rollout PSNR"), "{}", text(&o));
    let m = eval_metrics(&eval_out.join("metrics.json"));
    assert_eq!(m["clips"].as_u64(), Some(3), "{m}");
    assert_eq!(m["nmi_transitions"].as_u64(), Some(5 * 2), "--nmi-clips 5 × 2 transitions: {m}");
    let counts: u64 = m["code_action_counts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(counts, 5 * 2, "the code × action table counts every transition: {m}");
    // Breakout: one serve count per row of the table, within that row's transitions.
    let rows = m["code_action_counts"].as_array().unwrap();
    let serves = m["code_serve_counts"].as_array().expect("breakout frames: serves per code");
    assert_eq!(serves.len(), rows.len(), "{m}");
    for (serve, row) in serves.iter().zip(rows) {
        let row: u64 = row.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum();
        assert!(serve.as_u64().unwrap() <= row, "{m}");
    }
    assert!(text(&o).contains("serves"), "{}", text(&o));
    let nmi = m["nmi"].as_f64().expect("breakout records actions: an NMI");
    assert!((0.0..=1.0).contains(&nmi), "{m}");
    let per_frame =
        |key: &str| -> Vec<f64> { m[key].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect() };
    let (rollout, delta) = (per_frame("rollout_psnr_per_frame"), per_frame("delta_psnr_per_frame"));
    assert_eq!((rollout.len(), delta.len()), (2, 2));
    let mean = rollout.iter().sum::<f64>() / 2.0;
    assert!((mean - m["rollout_psnr"].as_f64().unwrap()).abs() < 1e-9, "{m}");
    let delta_mean = m["rollout_psnr"].as_f64().unwrap() - m["random_action_psnr"].as_f64().unwrap();
    assert!((delta_mean - m["delta_psnr"].as_f64().unwrap()).abs() < 1e-9, "{m}");
    // Breakout frames get the object table; a copy of the last context frame keeps its ball.
    assert!(text(&o).contains("copy last context frame") && text(&o).contains("ball"), "{}", text(&o));
    // On breakout the summary carries the demo's own targets as well.
    assert!(text(&o).contains("≥ 25") && text(&o).contains("≥ 0.5"), "{}", text(&o));
    let objects = &m["objects"];
    assert_eq!(objects["game"], "breakout", "{m}");
    let copy = &objects["copy_last_frame"]["overall"];
    assert_eq!((copy["frames"].as_u64(), copy["ball_recall"].as_f64()), (Some(3 * 2), Some(1.0)), "{m}");
    // The first generated frame is the same sample in the rollout and one step from the truth.
    assert_eq!(objects["next_frame"]["per_frame"][0], objects["rollout"]["per_frame"][0], "{m}");
    assert!(text(&o).contains("next frame (one step)"), "{}", text(&o));
    for kind in ["rollout", "random_actions", "next_frame", "reconstruction"] {
        let per_frame = objects[kind]["per_frame"].as_array().unwrap();
        assert_eq!(per_frame.len(), 2, "{kind}: {m}");
        let share = objects[kind]["overall"]["off_palette_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{kind}: {m}");
    }

    // A tokenizer run is not a world model; clips longer than the episodes; a missing split.
    let tok = demo.join("tokenizer");
    #[rustfmt::skip]
    let o = jinn(&["eval", "world", "--ckpt", tok.to_str().unwrap(), "--data", data.to_str().unwrap(),
                   "--out", eval_out.to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).contains("--ckpt"), "{}", text(&o));
    let o = run(&["--frames", "100000"]);
    assert!(!o.status.success() && text(&o).contains("--data"), "{}", text(&o));
    let o = run(&["--split", "nope"]);
    assert!(!o.status.success() && text(&o).contains("nope"), "{}", text(&o));
}

/// `jinn eval play` on a recorded-action model (its keys are named by the game: left, right):
/// it serves the model on a loopback port, holds each key, plays from frames with the ball in
/// flight and writes metrics.json; a latent-action model whose codes name no action (2 steps
/// of training) is refused, naming the keys it needs.
fn eval_play_drives_the_api_and_needs_named_keys(demo: &Path, tmp: &Path) {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo");
    let (data, gt) = (demo.join("data"), tmp.join("gt"));
    #[rustfmt::skip]
    let o = jinn(&[
        "train", "dynamics", "--config", configs.join("dynamics.toml").to_str().unwrap(),
        "--data", data.to_str().unwrap(), "--tokenizer", demo.join("tokenizer").to_str().unwrap(),
        "--actions", "gt", "--out", gt.to_str().unwrap(),
        "--set", "train.steps=2", "--set", "train.batch_size=2", "--set", "data.seq_len=4",
        "--set", "train.lr.warmup_steps=0", "--set", "train.lr.decay_steps=0",
        "--set", "model.model_dim=16", "--set", "model.ffn_dim=32", "--set", "model.num_heads=2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = tmp.join("eval-play");
    let play = |ckpt: &Path| {
        #[rustfmt::skip]
        let o = jinn(&[
            "eval", "play", "--ckpt", ckpt.to_str().unwrap(), "--data", data.to_str().unwrap(),
            "--starts", "2", "--hold", "2", "--play-steps", "3", "--maskgit-steps", "2",
            "--out", out.to_str().unwrap(),
        ]);
        o
    };
    let o = play(&gt);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ArrowLeft = action 1 \"left\""), "{}", text(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    let m = &m["metrics"];
    assert_eq!((m["left"][0].as_u64(), m["right"][0].as_u64()), (Some(1), Some(2)), "{m}");
    assert_eq!(m["steering"].as_array().unwrap().len(), 2, "{m}");
    // Every start is a trial here (none is at a game that is over); the count is reported.
    assert_eq!(m["steering_left_out"].as_u64(), Some(0), "{m}");
    // Holds that lost the paddle are the trials' missing positions.
    let missing = m["steering"].as_array().unwrap().iter().flat_map(|t| [&t["left_dx"], &t["right_dx"]]);
    assert_eq!(m["paddle_lost"].as_u64(), Some(missing.filter(|d| d.is_null()).count() as u64), "{m}");
    // Every failed trial, and only those, is a GIF in OUT/steering.
    let required = m["required_px"].as_f64().unwrap();
    let failed = m["steering"].as_array().unwrap().iter().filter(|t| {
        // A hold fails when it lost the paddle, or had room and moved too little.
        let fails = |dx: &serde_json::Value, room: &serde_json::Value, sign: f64| {
            dx.is_null() || (room.as_bool().unwrap() && !dx.as_f64().is_some_and(|d| sign * d >= required))
        };
        fails(&t["left_dx"], &t["room"][0], -1.0) || fails(&t["right_dx"], &t["room"][1], 1.0)
    });
    let gifs = std::fs::read_dir(out.join("steering")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(gifs, failed.count(), "{m}");
    for key in [
        "ball_present",
        "ball_present_real",
        "ball_moves",
        "ball_moves_real",
        "off_palette",
        "off_palette_reconstruction",
    ] {
        let v = m[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "{key}: {m}");
    }
    // A ball that moves as in the game is a ball present.
    assert!(m["ball_moves"].as_f64() <= m["ball_present"].as_f64(), "{m}");
    assert!(m["ball_moves_real"].as_f64() <= m["ball_present_real"].as_f64(), "{m}");
    // Where the ball vanished: at most once per start, each place listed once.
    assert_eq!(m["ball_starts"].as_u64(), Some(2), "{m}");
    let vanished = m["ball_vanished"].as_array().unwrap();
    let starts: u64 = vanished.iter().map(|v| v["starts"].as_u64().unwrap()).sum();
    assert!(starts <= 2 && vanished.iter().all(|v| v["returned"].as_u64() <= v["starts"].as_u64()), "{m}");
    let places: std::collections::HashSet<&str> =
        vanished.iter().map(|v| v["place"].as_str().unwrap()).collect();
    assert_eq!(places.len(), vanished.len(), "{m}");
    assert!(text(&o).contains(&format!("the ball vanished in {starts} of 2 starts")), "{}", text(&o));
    // Only the named keys: the recorded-action model's noop has no key.
    #[rustfmt::skip]
    let o = jinn(&[
        "eval", "play", "--ckpt", gt.to_str().unwrap(), "--data", data.to_str().unwrap(), "--keys", "named", "--temperature", "0.5",
        "--starts", "1", "--hold", "1", "--play-steps", "2", "--maskgit-steps", "1",
        "--out", out.to_str().unwrap(),
    ]);
    assert!(o.status.success() && text(&o).contains("random named keys"), "{}", text(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!((&m["keys"], m["temperature"].as_f64()), (&serde_json::json!("named"), Some(0.5)), "{m}");
    // A negative temperature is refused before a model is served.
    #[rustfmt::skip]
    let o = jinn(&[
        "eval", "play", "--ckpt", gt.to_str().unwrap(), "--data", data.to_str().unwrap(), "--temperature=-1",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--temperature") && text(&o).contains("≥ 0"),
        "{}",
        text(&o)
    );
    // Replaying the LAM's codes needs a LAM.
    #[rustfmt::skip]
    let o = jinn(&[
        "eval", "play", "--ckpt", gt.to_str().unwrap(), "--data", data.to_str().unwrap(), "--replay",
        "--starts", "1", "--hold", "1", "--play-steps", "2", "--maskgit-steps", "1",
        "--out", out.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--replay") && text(&o).contains("no LAM"),
        "{}",
        text(&o)
    );
    let o = play(&demo.join("dynamics"));
    assert!(!o.status.success() && text(&o).contains("ArrowLeft and ArrowRight"), "{}", text(&o));
}

/// `jinn train tokenizer --kind mae` → `jinn train dynamics --kind diffusion` (on the demo's
/// LAM) → `jinn sample` → `jinn eval world --compare` beside the demo's MaskGIT model, plus the
/// wrong-tokenizer and K-mismatch errors.
fn diffusion_pipeline_trains_samples_and_compares(demo: &Path, tmp: &Path) {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo");
    let data = demo.join("data");
    let (mae, diffusion) = (tmp.join("mae"), tmp.join("diffusion"));
    let tiny = [
        "--set",
        "train.steps=2",
        "--set",
        "train.batch_size=2",
        "--set",
        "train.lr.warmup_steps=0",
        "--set",
        "train.lr.decay_steps=0",
        "--set",
        "model.model_dim=16",
        "--set",
        "model.ffn_dim=32",
        "--set",
        "model.num_heads=2",
    ];
    let train = |what: &str, config: &str, out: &Path, extra: &[&str]| {
        let cfg = configs.join(config);
        let mut args =
            vec!["train", what, "--config", cfg.to_str().unwrap(), "--data", data.to_str().unwrap()];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(tiny);
        args.extend(extra);
        jinn(&args)
    };
    let o = train("tokenizer", "tokenizer-mae.toml", &mae, &["--kind", "mae"]);
    assert!(o.status.success(), "{}", text(&o));
    let lam = demo.join("lam");
    let dyn_args = ["--kind", "diffusion", "--lam", lam.to_str().unwrap(), "--set", "model.denoise_steps=4"];
    let with_tok = |tok: &Path| {
        let mut a = dyn_args.to_vec();
        a.extend(["--tokenizer", tok.to_str().unwrap()]);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    // A VQ tokenizer for diffusion dynamics is refused with the fix.
    let vq = with_tok(&demo.join("tokenizer"));
    let vq: Vec<&str> = vq.iter().map(String::as_str).collect();
    let o = train("dynamics", "dynamics-diffusion.toml", &tmp.join("bad"), &vq);
    assert!(!o.status.success() && text(&o).contains("--kind mae"), "{}", text(&o));
    let ok = with_tok(&mae);
    let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
    let o = train("dynamics", "dynamics-diffusion.toml", &diffusion, &ok);
    assert!(o.status.success(), "{}", text(&o));

    let sample = |extra: &[&str]| {
        let out = tmp.join("diffusion-sample");
        let mut args =
            vec!["sample", "--ckpt", diffusion.to_str().unwrap(), "--data", data.to_str().unwrap()];
        args.extend(["--context", "1", "--frames", "2", "--out", out.to_str().unwrap()]);
        args.extend(extra);
        (jinn(&args), out)
    };
    let (o, out) = sample(&[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.join("rollout.gif").is_file());
    assert_eq!(per_frame(&out.join("metrics.json")).len(), 2);
    let (o, _) = sample(&["--denoise-steps", "64"]);
    assert!(!o.status.success() && text(&o).contains("K = 4"), "{}", text(&o));

    // One table over the demo's MaskGIT model and the diffusion model.
    let eval_out = tmp.join("eval-both");
    let maskgit = demo.join("dynamics");
    #[rustfmt::skip]
    let o = jinn(&[
        "eval", "world", "--ckpt", maskgit.to_str().unwrap(), "--compare", diffusion.to_str().unwrap(),
        "--data", data.to_str().unwrap(), "--episodes", "2", "--batch-size", "2", "--frames", "2",
        "--steps", "2", "--out", eval_out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(" diffusion ") && text(&o).contains(" maskgit "), "{}", text(&o));
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(eval_out.join("comparison.json")).unwrap()).unwrap();
    let kinds: Vec<&str> = rows.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["maskgit", "diffusion"]);
    for r in &rows {
        assert!(r["metrics"]["rollout_psnr"].as_f64().unwrap().is_finite(), "{r}");
    }
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
    // The demo ends with `jinn eval world`: its table and metrics.json.
    assert!(log.contains("controllability ΔPSNR") && log.contains("NMI"), "{log}");
    let m = eval_metrics(&out.join("eval/metrics.json"));
    assert_eq!((m["clips"].as_u64(), m["frames"].as_u64()), (Some(2), Some(2)), "{m}");

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

    eval_world_writes_metrics_and_names_bad_inputs(&out, dir.path());
    diffusion_pipeline_trains_samples_and_compares(&out, dir.path());

    // `jinn play` serves the trained model: a session from the dataset, steps under two
    // actions give frames of the model's size, an unknown action is a 400.
    play_serves_the_model(&out.join("dynamics"), &out.join("data"));
    eval_play_drives_the_api_and_needs_named_keys(&out, dir.path());

    // A corrupt dynamics checkpoint gives a clear error naming the run.
    std::fs::write(out.join("dynamics/step_000002/model.safetensors"), b"not a checkpoint").unwrap();
    let (o, _) = s("lam", "s4");
    let log = text(&o);
    assert!(!o.status.success(), "{log}");
    assert!(log.contains("dynamics") && log.contains("checkpoint"), "{log}");
}
