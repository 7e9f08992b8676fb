//! `--device` on every command that runs a model: `cpu` is accepted (the command goes on to
//! fail on a missing run or an impossible count, cheaply and without naming the flag), a bad
//! value is refused naming the flag and the accepted forms, and a backend this binary lacks
//! says which feature to build with.

use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// One command line that fails fast after parsing, and a piece of the error it gives.
struct Case {
    args: Vec<String>,
    error: &'static str,
}

fn case(args: &[&str], error: &'static str) -> Case {
    Case { args: args.iter().map(|s| s.to_string()).collect(), error }
}

/// Runs every case with `--device cpu` (accepted), `--device bogus` (refused, naming the flag)
/// and, in a build without the wgpu feature, `--device wgpu:cpu` (refused, naming the feature).
fn check(cases: &[Case]) {
    for c in cases {
        let with = |device: &str| {
            let mut args: Vec<&str> = c.args.iter().map(String::as_str).collect();
            args.extend(["--device", device]);
            let o = jinn(&args);
            (o.status.success(), text(&o), args.join(" "))
        };
        let (ok, out, line) = with("cpu");
        assert!(!ok && out.contains(c.error) && !out.contains("--device"), "jinn {line}:\n{out}");
        let (ok, out, line) = with("bogus");
        assert!(
            !ok && out.contains("--device")
                && out.contains("unknown device 'bogus'")
                && out.contains("wgpu:integrated"),
            "jinn {line}:\n{out}"
        );
        if !cfg!(feature = "wgpu") {
            let (ok, out, line) = with("wgpu:cpu");
            assert!(
                !ok && out.contains("--device") && out.contains("--features wgpu"),
                "jinn {line}:\n{out}"
            );
        }
    }
}

/// A temporary directory (kept while it lives), a path in it that does not exist, and one
/// for a run's output.
fn scratch() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (none, out) = (path("none"), path("out"));
    (dir, none, out)
}

#[test]
fn world_model_commands_take_the_device() {
    let (_dir, none, _) = scratch();
    let none = none.as_str();
    check(&[
        case(&["sample", "--ckpt", none, "--data", none], "loading the world model"),
        case(&["play", "--ckpt", none, "--no-browser"], "no such run directory"),
        case(&["demo", "--out", none, "--set", "nostage"], "STAGE:KEY=VALUE"),
        case(&["eval", "world", "--ckpt", none, "--data", none, "--episodes", "0"], "--episodes"),
        case(&["eval", "play", "--ckpt", none, "--data", none, "--starts", "0"], "--starts"),
        case(&["eval", "tokenizer", "--ckpt", none, "--data", none, "--batches", "0"], "--batches"),
    ]);
}

#[test]
fn training_commands_take_the_device() {
    let (_dir, none, out) = scratch();
    let (none, out) = (none.as_str(), out.as_str());
    check(&[
        case(&["train", "tokenizer", "--data", none, "--out", out], "none"),
        case(&["train", "lam", "--data", none, "--out", out], "none"),
        case(&["train", "dynamics", "--data", none, "--out", out, "--tokenizer", none], "none"),
        case(&["lm", "train", "--data", none, "--out", out], "none"),
        case(&["graph", "train", "--data", none, "--out", out], "none"),
    ]);
}

#[test]
fn lm_and_graph_commands_take_the_device() {
    let (_dir, none, _) = scratch();
    let none = none.as_str();
    check(&[
        case(&["lm", "eval", "--ckpt", none], "loading a language model"),
        case(&["lm", "generate", "--ckpt", none, "--prompt", "x"], "loading a language model"),
        case(&["graph", "eval", "--ckpt", none, "--data", none], "loading graph model"),
        case(&["graph", "query", "--ckpt", none, "--head", "x", "--path", "r"], "loading graph model"),
    ]);
}

#[test]
fn benchmarks_take_the_device() {
    let (_dir, none, _) = scratch();
    let none = none.as_str();
    check(&[
        case(&["bench", "lm", "--data", none], "no such corpus directory"),
        case(&["bench", "rev", "--rounds", "0"], "--rounds"),
        case(&["bench", "graph", "--configs", none], "none"),
        case(&["bench", "sample", "--frames", "1"], "--frames"),
        case(&["bench", "sfd", "--data", none], "reading --data"),
        case(&["bench", "serve", "--steps", "1"], "--steps"),
        case(&["bench", "train", "--steps", "0"], "--steps"),
    ]);
}

#[test]
fn help_says_what_bare_wgpu_means() {
    let o = jinn(&["sample", "--help"]);
    let out = text(&o);
    assert!(
        o.status.success()
            && out.contains("wgpu:integrated")
            && out.contains("not necessarily discrete GPU 0"),
        "{out}"
    );
}
