//! End-to-end `jinn graph`: train a few steps on the shipped Nations graph, evaluate the run,
//! answer a path query, and name unknown entities and malformed files in errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn nations() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/kg/nations")
}

#[test]
fn graph_train_eval_query_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let (data, run_s) = (nations(), run.to_str().unwrap().to_string());
    #[rustfmt::skip]
    let o = jinn(&[
        "graph", "train", "--data", data.to_str().unwrap(), "--out", &run_s,
        "--set", "train.steps=20", "--set", "train.lr.warmup_steps=2", "--set", "train.val_every=10",
        "--set", "train.ckpt_every=20", "--set", "model.dim=16",
    ]);
    assert!(o.status.success(), "{}", text(&o));

    let o = jinn(&["graph", "eval", "--ckpt", &run_s, "--data", data.to_str().unwrap(), "--device", "cpu"]);
    let log = text(&o);
    assert!(o.status.success(), "{log}");
    let mrr: f64 = log
        .split("MRR")
        .nth(1)
        .and_then(|rest| {
            rest.split_whitespace()
                .find_map(|w| w.trim_matches(|c: char| !c.is_ascii_digit() && c != '.').parse().ok())
        })
        .unwrap_or_else(|| panic!("no MRR in: {log}"));
    assert!((0.0..=1.0).contains(&mrr), "{log}");

    let o = jinn(&[
        "graph",
        "query",
        "--ckpt",
        &run_s,
        "--head",
        "usa",
        "--path",
        "militaryalliance",
        "--top",
        "3",
    ]);
    let log = text(&o);
    assert!(o.status.success(), "{log}");
    assert!(
        [
            "uk",
            "netherlands",
            "usa",
            "egypt",
            "brazil",
            "china",
            "cuba",
            "india",
            "indonesia",
            "israel",
            "jordan",
            "burma",
            "poland",
            "ussr"
        ]
        .iter()
        .any(|e| log.contains(e)),
        "{log}"
    );

    // Unknown names and malformed lines are named.
    let o = jinn(&["graph", "query", "--ckpt", &run_s, "--head", "atlantis", "--path", "militaryalliance"]);
    assert!(!o.status.success() && text(&o).contains("atlantis"), "{}", text(&o));
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    for split in ["train", "valid", "test"] {
        std::fs::write(bad.join(format!("{split}.txt")), "usa\tmilitaryalliance\n").unwrap();
    }
    // `jinn train graph` is the same command as `jinn graph train`.
    let o = jinn(&[
        "train",
        "graph",
        "--data",
        bad.to_str().unwrap(),
        "--out",
        dir.path().join("r2").to_str().unwrap(),
    ]);
    let log = text(&o);
    assert!(
        !o.status.success() && log.contains("train.txt:1") && log.contains("3 tab-separated fields"),
        "{log}"
    );
}
