//! Whole datasets as Jasmine's generators leave them: the CoinRun sample written by
//! `jasmine_data/coinrun/generate_coinrun_dataset.py` itself (tests/fixtures/jasmine_coinrun),
//! and, when python3 has numpy and array_record, datasets laid out like each generator's output
//! by `tests/python/write_jasmine_dataset.py` (metadata.json by `json.dump`, NaN included).

mod common;

use common::{fixtures, python_available, run_python};
use jinn_data::dataset::{has_record_files, index_cache_paths, Dataset, INDEX_CACHE_FILE};
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::metadata::{action_names, DatasetMetadata, METADATA_FILE};
use jinn_data::{ActionDtype, FrameShape};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// sum((i + 1) * byte) mod 2^64, as the Python side computes it.
fn checksum(b: &[u8]) -> u64 {
    b.iter().enumerate().fold(0u64, |acc, (i, &v)| acc.wrapping_add((i as u64 + 1).wrapping_mul(v.into())))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

const COINRUN: FrameShape = FrameShape { height: 64, width: 64, channels: 3 };

#[test]
fn coinrun_generator_output_reads_as_python_reads_it() {
    let root = fixtures().join("jasmine_coinrun");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("jasmine_coinrun.expected.json")).unwrap())
            .unwrap();

    // json.dump wrote NaN for the splits without files; the paths are the generator's.
    let text = std::fs::read_to_string(root.join(METADATA_FILE)).unwrap();
    assert!(text.contains("\"avg_episode_len_val\": NaN"), "{text}");
    let meta = DatasetMetadata::load(&root.join(METADATA_FILE)).unwrap();
    assert_eq!((meta.env.as_str(), meta.num_actions, meta.frame_shape()), ("coinrun", Some(15), None));
    assert!(meta.extra["avg_episode_len_test"].is_null());
    assert_eq!(meta.extra["avg_episode_len_train"], 7.0);
    let names = action_names(&meta.env, meta.num_actions).unwrap();
    assert_eq!(names.len(), 15);

    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root, tmp.path());
    let ds = Dataset::open_for_model(&tmp.path().join("train"), 1, COINRUN).unwrap();
    let want = expected["train/data_0000.array_record"].as_array().unwrap();
    assert_eq!(ds.total_records(), want.len());
    for (i, w) in want.iter().enumerate() {
        let r = ds.read_record(0, i as u64).unwrap();
        assert_eq!(r.sequence_length as u64, w["sequence_length"].as_u64().unwrap(), "record {i}");
        assert_eq!(checksum(&r.raw_video), w["raw_video_checksum"].as_u64().unwrap(), "record {i}");
        let a = r.actions.unwrap();
        assert_eq!(a.dtype, ActionDtype::I32);
        let values: Vec<i64> = w["actions"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        assert_eq!(a.values, values, "record {i}");
    }
    // The 4-frame tail chunk is too short for 8-frame clips; the loader samples the others.
    let ds = Arc::new(Dataset::open_for_model(&tmp.path().join("train"), 8, COINRUN).unwrap());
    assert_eq!((ds.records().len(), ds.skipped_short()), (3, 1));
    let cfg =
        LoaderConfig { batch_size: 2, seq_len: 8, seed: 1, threads: 1, prefetch: 1, ..Default::default() };
    let batch = Loader::new(ds, cfg).unwrap().next().unwrap().unwrap();
    assert_eq!(batch.videos.len(), 2 * 8 * COINRUN.frame_bytes());
    assert!(batch.actions.unwrap().iter().all(|&a| (0..15).contains(&a)));
}

#[test]
fn coinrun_shape_errors_and_missing_or_empty_splits_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("jasmine_coinrun"), tmp.path());
    let train = tmp.path().join("train");
    let err = |r: jinn_data::Result<Dataset>| r.err().expect("an error").to_string();

    let e = err(Dataset::open(&train, 1, None));
    assert!(e.contains("metadata.json records no frame shape") && e.contains("--frame-shape"), "{e}");
    // 98304 bytes per 8 frames: 60×64×3 does not divide them; both are named.
    let e = err(Dataset::open(&train, 1, Some(FrameShape::rgb(60, 64))));
    assert!(
        e.contains("data_0000.array_record") && e.contains("98304 bytes") && e.contains("60×64×3"),
        "{e}"
    );
    assert!(e.contains("does not divide"), "{e}");
    // The generator wrote no test/ (no episodes) and an empty val/ (too few chunks for a file).
    let e = err(Dataset::open_for_model(&tmp.path().join("test"), 1, COINRUN));
    assert!(e.contains("does not exist") && e.contains("test"), "{e}");
    std::fs::create_dir(tmp.path().join("val")).unwrap();
    assert!(!has_record_files(&tmp.path().join("val")) && has_record_files(&train));
    let e = err(Dataset::open_for_model(&tmp.path().join("val"), 1, COINRUN));
    assert!(e.contains("no *.array_record files") && e.contains("split is empty"), "{e}");

    // A model config that disagrees with a recorded shape is named with it.
    let mut meta = DatasetMetadata::load(&tmp.path().join(METADATA_FILE)).unwrap();
    (meta.height, meta.width, meta.channels) = (Some(64), Some(64), Some(3));
    meta.save(tmp.path()).unwrap();
    let e = err(Dataset::open_for_model(&train, 1, FrameShape::rgb(32, 32)));
    assert!(e.contains("32×32×3") && e.contains("64×64×3"), "{e}");
}

#[test]
fn index_cache_goes_to_the_user_cache_when_the_dataset_directory_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("coinrun");
    copy_dir(&fixtures().join("jasmine_coinrun"), &data);
    let train = data.join("train");
    let cache = tmp.path().join("cache");
    // Only this test sets it; other tests' datasets are writable and never reach it.
    std::env::set_var("JINN_CACHE_DIR", &cache);

    // A directory where the cache file would go makes the dataset directory refuse it (even
    // for root, whom permission bits do not stop).
    std::fs::create_dir(train.join(INDEX_CACHE_FILE)).unwrap();
    let first = Dataset::open_for_model(&train, 1, COINRUN).unwrap();
    let paths = index_cache_paths(&train);
    assert_eq!(paths.len(), 2);
    assert!(paths[1].starts_with(cache.join("index")), "{paths:?}");
    let cached: Value = serde_json::from_slice(&std::fs::read(&paths[1]).unwrap()).unwrap();
    assert_eq!(cached["files"][0]["seq_lens"], serde_json::json!([8, 8, 4, 8]));
    // The next open reads the lengths from there (a corrupt file would be rescanned instead).
    let again = Dataset::open_for_model(&train, 1, COINRUN).unwrap();
    assert_eq!(again.records(), first.records());

    // Writable again: the cache goes next to the files.
    std::fs::remove_dir(train.join(INDEX_CACHE_FILE)).unwrap();
    std::fs::remove_file(&paths[1]).unwrap();
    Dataset::open_for_model(&train, 1, COINRUN).unwrap();
    assert!(train.join(INDEX_CACHE_FILE).is_file() && !paths[1].exists());
}

/// Every split of a dataset `write_jasmine_dataset.py STYLE` wrote, checked record by record
/// against what Python read back.
fn check_style(style: &str) -> (tempfile::TempDir, DatasetMetadata) {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_python("write_jasmine_dataset.py", &[style, tmp.path().to_str().unwrap()]);
    let expected: Value = serde_json::from_str(&out).unwrap();
    let dims: Vec<usize> =
        expected["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    let shape = FrameShape { height: dims[0], width: dims[1], channels: dims[2] };
    let meta = DatasetMetadata::load(&tmp.path().join(METADATA_FILE)).unwrap();
    for (split, files) in expected["splits"].as_object().unwrap() {
        let dir = tmp.path().join(split);
        if files.as_object().unwrap().is_empty() {
            assert!(!has_record_files(&dir), "{style}/{split}");
            continue;
        }
        let ds = Dataset::open_for_model(&dir, 1, shape).unwrap_or_else(|e| panic!("{style}/{split}: {e}"));
        let names: Vec<&String> = files.as_object().unwrap().keys().collect();
        assert_eq!(ds.files().len(), names.len(), "{style}/{split}");
        for (f, (name, records)) in files.as_object().unwrap().iter().enumerate() {
            assert!(ds.files()[f].path().ends_with(name), "{style}/{split}: sorted like Python's list");
            for (i, want) in records.as_array().unwrap().iter().enumerate() {
                let r = ds.read_record(f, i as u64).unwrap();
                let at = format!("{style}/{split}/{name} record {i}");
                assert_eq!(r.sequence_length as u64, want[0].as_u64().unwrap(), "{at}");
                assert_eq!(checksum(&r.raw_video), want[1].as_u64().unwrap(), "{at}");
                match (&r.actions, want[2].as_array()) {
                    (None, None) => {}
                    (Some(a), Some(v)) => {
                        let v: Vec<i64> = v.iter().map(|x| x.as_i64().unwrap()).collect();
                        assert_eq!(a.values, v, "{at}");
                        assert_eq!(a.dtype.numpy_name(), want[3].as_str().unwrap(), "{at}");
                    }
                    (got, want) => panic!("{at}: actions {got:?}, expected {want:?}"),
                }
            }
        }
        // Windows decode through the borrowed path the loader uses.
        let r = ds.records()[0];
        let w = ds.read_window(r, 0, r.len as usize).unwrap();
        assert_eq!(w.frames, ds.read_record(r.file as usize, r.record.into()).unwrap().raw_video);
    }
    (tmp, meta)
}

#[test]
fn every_generators_layout_reads_as_python_reads_it() {
    if !python_available("Jasmine generator layouts") {
        return;
    }
    let (_coinrun, m) = check_style("coinrun");
    assert_eq!((m.env.as_str(), m.num_actions), ("coinrun", Some(15)));
    assert!(m.extra["avg_episode_len_val"].is_null() && m.extra["avg_episode_len_test"].is_null());

    let (_minatar, m) = check_style("minatar");
    assert_eq!((m.env.as_str(), m.num_actions), ("MinAtar-Breakout", Some(6)));
    assert_eq!(action_names(&m.env, m.num_actions), None);

    // Atari's generator writes no env key.
    let (atari, m) = check_style("atari");
    assert_eq!((m.env.as_str(), m.num_actions), ("", Some(4)));
    assert_eq!(m.extra["avg_episode_len_test"], 0.0);
    assert!(!atari.path().join("test").exists());

    let (_video, m) = check_style("video");
    assert_eq!((m.env.as_str(), m.num_actions), ("minecraft", None));
    assert_eq!(m.extra["episode_metadata_test"][2]["path"], "");

    let (_dtypes, m) = check_style("dtypes");
    assert!(m.extra["avg_episode_len_val"].is_null());
}
