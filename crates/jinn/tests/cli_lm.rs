//! End-to-end `jinn lm`: train a tiny byte-level RSF-LM on two of the shipped plays, resume it,
//! evaluate it (held-out play and --text), generate, and reject bad prompts clearly.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn lm_train_resume_eval_generate_and_bad_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = common::shakespeare_excerpt(dir.path());
    let run = dir.path().join("run");
    let (corpus_s, run_s) = (corpus.to_str().unwrap(), run.to_str().unwrap());
    let config = repo().join("configs/lm/shakespeare.toml");
    #[rustfmt::skip]
    let train = |extra: &[&str]| {
        let mut args = vec![
            "lm", "train", "--config", config.to_str().unwrap(), "--data", corpus_s, "--out", run_s,
            "--set", "train.steps=6", "--set", "train.batch_size=2", "--set", "train.val_every=3",
            "--set", "train.ckpt_every=3", "--set", "train.lr.warmup_steps=1", "--set", "train.lr.decay_steps=1",
            "--set", "model.d_model=16", "--set", "model.depth=2", "--set", "model.num_heads=2",
            "--set", "model.d_ffn=32", "--set", "model.max_seq=32",
        ];
        args.extend_from_slice(extra);
        jinn(&args)
    };
    let o = train(&["--stop-at", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(run.join("data/val.tokens").exists() && run.join("data/meta.json").exists());
    let o = train(&[]);
    assert!(!o.status.success() && text(&o).contains("--resume"), "{}", text(&o));
    let o = train(&["--resume"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("steps 3..6"), "{}", text(&o));

    let o = jinn(&["lm", "eval", "--ckpt", run_s, "--device", "cpu"]);
    let log = text(&o);
    assert!(o.status.success(), "{log}");
    let bpb: f64 = log
        .split("nats/token, ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no bits/byte in: {log}"));
    // Barely trained: close to uniform over 256 bytes (8 bits), and certainly finite.
    assert!(bpb > 3.0 && bpb < 9.0, "{log}");
    let file = corpus.join("macbeth_gut_f.txt");
    let o = jinn(&["lm", "eval", "--ckpt", run_s, "--text", file.to_str().unwrap()]);
    assert!(o.status.success() && text(&o).contains("macbeth"), "{}", text(&o));

    let gen = |prompt: &str, max: &str| {
        jinn(&["lm", "generate", "--ckpt", run_s, "--prompt", prompt, "--max-tokens", max, "--seed", "1"])
    };
    let o = gen("Thunder. ", "10");
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("Thunder. "), "{stdout}");
    assert!(text(&o).contains("10 tokens in"), "{}", text(&o));
    let o2 = gen("Thunder. ", "10");
    assert_eq!(o.stdout, o2.stdout, "same seed, same text");

    let o = gen("", "10");
    assert!(!o.status.success() && text(&o).contains("prompt is empty"), "{}", text(&o));
    let o = gen(&"x".repeat(40), "1");
    assert!(!o.status.success() && text(&o).contains("prompt is 40 tokens"), "{}", text(&o));
    let o = gen("ab", "40");
    assert!(!o.status.success() && text(&o).contains("max_seq"), "{}", text(&o));
    let o = jinn(&["lm", "eval", "--ckpt", dir.path().to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).contains("no valid checkpoint"), "{}", text(&o));

    let served = String::from_utf8_lossy(&o2.stdout).trim_end_matches('\n').to_string();
    serves_the_same_text(&run, served.strip_prefix("Thunder. ").unwrap());
}

/// `jinn play --lm RUN` serves the model at /v1/lm/generate: same seed, same text as the CLI.
fn serves_the_same_text(run: &Path, expected: &str) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_jinn"))
        .args(["play", "--lm", run.to_str().unwrap(), "--no-browser", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start jinn play --lm");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line.split_whitespace().find(|w| w.starts_with("http://")).map(|u| u.trim_end_matches('/'));
    let result = std::panic::catch_unwind(|| {
        let base = base.unwrap_or_else(|| panic!("no URL in: {line}"));
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let post = |body: &str| {
            let mut r = agent.post(format!("{base}/v1/lm/generate")).send(body.to_string()).unwrap();
            let json: serde_json::Value =
                serde_json::from_slice(&r.body_mut().read_to_vec().unwrap()).unwrap();
            (r.status().as_u16(), json)
        };
        let (status, reply) =
            post(r#"{"prompt": "Thunder. ", "max_tokens": 10, "seed": 1, "stream": false}"#);
        assert_eq!(status, 200, "{reply}");
        assert_eq!((reply["text"].as_str(), reply["tokens"].as_u64()), (Some(expected), Some(10)));
        let (status, reply) = post(&format!(r#"{{"prompt": "{}"}}"#, "x".repeat(40)));
        assert_eq!(status, 400, "{reply}");
        assert!(reply["error"].as_str().unwrap().contains("context holds 32"), "{reply}");
    });
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
