//! The pickle codec against CPython: golden pickles written by
//! `tests/python/make_pickle_fixtures.py` (CPython 3.11, NumPy 2.4, protocols 2–5), and a live
//! round trip through `python3` when it is installed.

mod common;

use jinn_data::pickle::{
    decode_episode, decode_episode_borrowed, encode_episode, encode_episode_with, NumpyModule,
};
use jinn_data::{ActionArray, ActionDtype, DataError, EpisodeRecord};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// sum((i + 1) * v) mod 2^64, as the fixture script computes it.
fn checksum(values: impl Iterator<Item = i64>) -> u64 {
    values.enumerate().fold(0u64, |acc, (i, v)| acc.wrapping_add((i as u64 + 1).wrapping_mul(v as u64)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check(name: &str, got: &EpisodeRecord, exp: &Value) {
    assert_eq!(got.raw_video.len() as u64, exp["raw_video_len"].as_u64().unwrap(), "{name}");
    assert_eq!(
        checksum(got.raw_video.iter().map(|&b| b.into())),
        exp["raw_video_checksum"].as_u64().unwrap(),
        "{name}"
    );
    if let Some(h) = exp["raw_video_hex"].as_str() {
        assert_eq!(hex(&got.raw_video), h, "{name}");
    }
    assert_eq!(got.sequence_length as u64, exp["sequence_length"].as_u64().unwrap(), "{name}");
    assert_eq!(got.video_file_name.as_deref(), exp["video_file_name"].as_str(), "{name}");
    match (&got.actions, &exp["actions"]) {
        (None, Value::Null) => {}
        (Some(a), e) if e.is_object() => {
            let dtype: ActionDtype = serde_json::from_value(e["dtype"].clone()).unwrap();
            assert_eq!(a.dtype, dtype, "{name}");
            let shape: Vec<usize> =
                e["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
            assert_eq!(a.shape, shape, "{name}");
            assert_eq!(a.values.len() as u64, e["len"].as_u64().unwrap(), "{name}");
            assert_eq!(checksum(a.values.iter().copied()), e["checksum"].as_u64().unwrap(), "{name}");
            if let Some(vals) = e["values"].as_array() {
                let vals: Vec<i64> = vals.iter().map(|v| v.as_i64().unwrap()).collect();
                assert_eq!(a.values, vals, "{name}");
            }
        }
        (got, exp) => panic!("{name}: actions {got:?}, expected {exp}"),
    }
}

#[test]
fn golden_pickles_decode_to_the_python_values() {
    let m = manifest();
    let valid = m["valid"].as_object().unwrap();
    assert!(valid.len() >= 120, "fixtures missing; run tests/python/make_pickle_fixtures.py");
    for (name, exp) in valid {
        let bytes = std::fs::read(fixtures().join(name)).unwrap();
        let got = decode_episode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(name, &got, exp);
        let borrowed = decode_episode_borrowed(&bytes).unwrap();
        assert_eq!(borrowed.into_owned(), got, "{name}");
    }
}

#[test]
fn encoding_is_byte_identical_to_cpython_protocol_4() {
    let m = manifest();
    let mut compared = 0;
    for (name, exp) in m["valid"].as_object().unwrap() {
        if exp["encode"] != json!(true) {
            continue;
        }
        let golden = std::fs::read(fixtures().join(name)).unwrap();
        let record = decode_episode(&golden).unwrap();
        let module = match exp["numpy_module"].as_str().unwrap() {
            "Core" => NumpyModule::Core,
            _ => NumpyModule::UnderscoreCore,
        };
        let mine = encode_episode_with(&record, module).unwrap();
        assert!(
            mine == golden,
            "{name}: encoding differs from CPython's\n mine: {mine:?}\n gold: {golden:?}"
        );
        if module == NumpyModule::Core || record.actions.is_none() {
            assert_eq!(encode_episode(&record), golden, "{name}: default encoding");
        }
        compared += 1;
    }
    assert!(compared >= 25, "only {compared} goldens compared");
}

#[test]
fn hostile_golden_pickles_are_clear_errors() {
    let m = manifest();
    for (name, needle) in m["hostile"].as_object().unwrap() {
        let bytes = std::fs::read(fixtures().join(name)).unwrap();
        match decode_episode(&bytes) {
            Err(e @ DataError::Pickle { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(needle.as_str().unwrap()), "{name}: {msg}");
            }
            other => panic!("{name}: expected a pickle error, got {other:?}"),
        }
    }
}

#[test]
fn every_truncation_of_every_golden_is_an_error() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".pickle") || name.starts_with("large") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for n in 0..bytes.len() {
            assert!(decode_episode(&bytes[..n]).is_err(), "{name}: prefix of {n} bytes decoded");
        }
    }
}

// ---- live round trip through python3 -------------------------------------------------------

/// Deterministic video bytes the Python side can regenerate: (31 i + seed) mod 251.
fn video(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((31 * i + seed) % 251) as u8).collect()
}

/// Python: for each case, load jinn's default pickle with warnings as errors and compare
/// values; pickle the same dict itself and compare bytes with jinn's NumPy 2 spelling.
const LIVE_CHECK: &str = r#"
import json, pickle, sys, warnings
import numpy as np
warnings.simplefilter("error")
d = sys.argv[1]
def read(name):
    with open(f"{d}/{name}", "rb") as f:
        return f.read()
cases = json.loads(read("cases.json"))
bad = []
for i, c in enumerate(cases):
    raw = ((np.arange(c["raw_len"], dtype=np.int64) * 31 + c["seed"]) % 251).astype(np.uint8).tobytes()
    exp = {"raw_video": raw, "sequence_length": c["seq_len"]}
    if c["actions"] is not None:
        a = c["actions"]
        exp["actions"] = np.array(a["values"], dtype=a["dtype"]).reshape(a["shape"])
    if c["name"] is not None:
        exp["video_file_name"] = c["name"]
    got = pickle.loads(read(f"{i}.pickle"))
    if list(got) != list(exp) or got["raw_video"] != raw or got["sequence_length"] != exp["sequence_length"] \
            or got.get("video_file_name") != exp.get("video_file_name"):
        bad.append(f"case {i}: values differ")
    if "actions" in exp:
        g = got["actions"]
        if g.dtype != exp["actions"].dtype or g.shape != exp["actions"].shape or not np.array_equal(g, exp["actions"]):
            bad.append(f"case {i}: actions differ: {g!r}")
    if pickle.dumps(exp, protocol=4) != read(f"{i}.np2.pickle"):
        bad.append(f"case {i}: bytes differ from pickle.dumps (raw_len {c['raw_len']})")
print(f"checked {len(cases)} cases")
if bad:
    print("\n".join(bad))
    sys.exit(1)
"#;

#[test]
fn python_reads_jinn_pickles_and_writes_the_same_bytes() {
    if !common::python_available("pickle live round trip") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    let mut raw_lens = vec![0, 1, 255, 256, 65_535, 65_536, 70_000];
    // Frame-boundary sweep: the frame reaches 64 KiB at different objects.
    raw_lens.extend((65_440..65_545).step_by(7));
    let actions_variants: Vec<Option<ActionArray>> = vec![
        None,
        Some(ActionArray::from_i64((0..10).map(|i| i * 977 - 3000).collect())),
        Some(ActionArray { dtype: ActionDtype::U8, shape: vec![3, 2], values: vec![0, 1, 2, 253, 254, 255] }),
        Some(ActionArray { dtype: ActionDtype::I8, shape: vec![4], values: vec![-128, -1, 0, 127] }),
        Some(ActionArray {
            dtype: ActionDtype::I64,
            shape: vec![600, 2],
            values: (0..1200).map(|i| i << 33).collect(),
        }),
        Some(ActionArray::from_i64((0..8200).collect())), // data of 65 600 bytes: unframed
    ];
    let seq_lens = [0usize, 255, 256, 65_535, 65_536, 1 << 31, (1 << 31) - 1, 1 << 40];
    for (k, &raw_len) in raw_lens.iter().enumerate() {
        for (j, actions) in actions_variants.iter().enumerate() {
            if raw_len > 70_000 && j > 1 {
                continue;
            }
            let name = match (k + j) % 3 {
                0 => None,
                1 => Some("clips/ü.mp4".to_string()),
                _ => Some("n".repeat(300)),
            };
            let seed = k * 7 + j;
            let record = EpisodeRecord {
                raw_video: video(raw_len, seed),
                sequence_length: seq_lens[(k + j) % seq_lens.len()],
                actions: actions.clone(),
                video_file_name: name,
            };
            cases.push((record, seed));
        }
    }
    // CPython's singletons (empty and 1-byte bytes, 1-character str) are memoized once and
    // then referenced: b'b' is also NumPy's reconstruct argument, '<' and '|' dtype orders.
    let u8_actions = |v: i64| Some(ActionArray { dtype: ActionDtype::U8, shape: vec![1], values: vec![v] });
    for (raw_len, seed, actions, name) in [
        (1, 67, u8_actions(98), Some("b")),
        (1, 0, u8_actions(0), Some("<")),
        (0, 0, Some(ActionArray { dtype: ActionDtype::I8, shape: vec![0], values: vec![] }), Some("")),
        (1, 1, Some(ActionArray::from_i64(vec![5])), Some("|")),
        (3, 2, u8_actions(1), Some("é")),
    ] {
        let record = EpisodeRecord {
            raw_video: video(raw_len, seed),
            sequence_length: raw_len,
            actions,
            video_file_name: name.map(String::from),
        };
        cases.push((record, seed));
    }
    let mut spec = Vec::new();
    for (i, (r, seed)) in cases.iter().enumerate() {
        std::fs::write(dir.path().join(format!("{i}.pickle")), encode_episode(r)).unwrap();
        let np2 = encode_episode_with(r, NumpyModule::UnderscoreCore).unwrap();
        std::fs::write(dir.path().join(format!("{i}.np2.pickle")), np2).unwrap();
        spec.push(json!({
            "raw_len": r.raw_video.len(),
            "seed": seed,
            "seq_len": r.sequence_length,
            "name": r.video_file_name,
            "actions": r.actions.as_ref().map(|a| json!({
                "dtype": a.dtype.numpy_name(), "shape": a.shape, "values": a.values,
            })),
        }));
    }
    std::fs::write(dir.path().join("cases.json"), serde_json::to_vec(&spec).unwrap()).unwrap();
    let out = Command::new("python3").args(["-c", LIVE_CHECK]).arg(dir.path()).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "python check failed:\n{text}");
    assert!(text.contains(&format!("checked {} cases", cases.len())), "{text}");
}
