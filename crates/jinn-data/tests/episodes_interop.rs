//! Whole-episode interop with Jasmine's format: the official array_record fixtures decode to
//! exactly what `jasmine_schema_expected.json` says and load through the dataset/loader, and
//! datasets jinn generates read back identically through Python's array_record + pickle + NumPy.

mod common;

use common::{fixtures, python_available};
use jinn_data::dataset::{Dataset, INDEX_CACHE_FILE};
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::{ActionDtype, FrameShape};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

fn expected() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("jasmine_schema_expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn shape_of(file: &Value) -> FrameShape {
    let n = |k: &str| file[k].as_u64().unwrap() as usize;
    FrameShape { height: n("height"), width: n("width"), channels: n("channels") }
}

#[test]
fn jasmine_fixtures_decode_exactly_as_expected() {
    for file in expected() {
        let name = file["file"].as_str().unwrap();
        let shape = shape_of(&file);
        // Each fixture alone in a directory, as a Jasmine split would be.
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(fixtures().join(name), dir.path().join(name)).unwrap();
        let ds = Dataset::open(dir.path(), 1, Some(shape)).unwrap();
        let records = file["records"].as_array().unwrap();
        assert_eq!(ds.total_records(), records.len(), "{name}");
        for want in records {
            let index = want["index"].as_u64().unwrap();
            let got = ds.read_record(0, index).unwrap();
            assert_eq!(
                got.sequence_length as u64,
                want["sequence_length"].as_u64().unwrap(),
                "{name}[{index}]"
            );
            let sum: u64 = got.raw_video.iter().map(|&b| b as u64).sum();
            assert_eq!(sum, want["frame_sum"].as_u64().unwrap(), "{name}[{index}] frame_sum");
            match (&got.actions, want.get("actions")) {
                (Some(a), Some(w)) => {
                    let w: Vec<i64> = w.as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
                    assert_eq!(a.values, w, "{name}[{index}] actions");
                    assert_eq!(a.dtype.numpy_name(), file["actions_dtype"].as_str().unwrap());
                }
                (None, None) => {}
                (a, w) => panic!("{name}[{index}]: actions {a:?} vs expected {w:?}"),
            }
            assert_eq!(got.video_file_name.as_deref(), want.get("video_file_name").and_then(Value::as_str));
        }
        // Jasmine's files carry no lengths: the dataset scanned them once and cached the index.
        assert!(dir.path().join(INDEX_CACHE_FILE).is_file(), "{name}: index cache written");
    }
}

#[test]
fn jasmine_fixture_feeds_the_loader_and_filters_short_records() {
    let name = "jasmine_schema_group8_uint8.array_record";
    let file = expected().into_iter().find(|f| f["file"] == name).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join(name), dir.path().join(name)).unwrap();
    // Records have 20..36 frames; a window of 25 keeps the three longest.
    let ds = Arc::new(Dataset::open(dir.path(), 25, Some(shape_of(&file))).unwrap());
    assert_eq!((ds.records().len(), ds.skipped_short()), (3, 2));
    let config = LoaderConfig { batch_size: 2, seq_len: 25, seed: 4, threads: 2, ..Default::default() };
    let batch = Loader::new(ds.clone(), config).unwrap().next().unwrap().unwrap();
    assert_eq!(batch.videos.len(), 2 * 25 * 64 * 64 * 3);
    let actions = batch.actions.unwrap();
    for (i, o) in batch.origins.iter().enumerate() {
        let record = ds.read_record(0, o.record.record as u64).unwrap();
        let a = record.actions.unwrap();
        assert_eq!(a.dtype, ActionDtype::U8);
        assert_eq!(&actions[i * 25..(i + 1) * 25], &a.values[o.start..o.start + 25]);
        let fb = 64 * 64 * 3;
        assert_eq!(
            &batch.videos[i * 25 * fb..(i + 1) * 25 * fb],
            &record.raw_video[o.start * fb..(o.start + 25) * fb]
        );
    }
}

#[test]
fn wrong_frame_shape_is_named_in_the_error() {
    let name = "jasmine_schema_no_actions.array_record";
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join(name), dir.path().join(name)).unwrap();
    let err = Dataset::open(dir.path(), 1, Some(FrameShape::rgb(64, 64))).err().unwrap().to_string();
    assert!(err.contains(name) && err.contains("518400 bytes") && err.contains("64×64×3"), "{err}");
    let err = Dataset::open(dir.path(), 1, None).err().unwrap().to_string();
    assert!(err.contains("--frame-shape"), "{err}");
}

#[test]
fn python_reads_generated_datasets_like_jinn() {
    if !python_available("python_reads_generated_datasets_like_jinn") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shape = FrameShape::rgb(32, 48);
    let cfg = GenerateConfig {
        env: "maze".into(),
        episodes: 4,
        frame_shape: shape,
        min_episode_len: 20,
        max_episode_len: 70,
        chunk_len: 32,
        chunks_per_file: 3,
        val_fraction: 0.0,
        test_fraction: 0.0,
        ..Default::default()
    };
    generate_dataset(&cfg, dir.path(), &mut |_| {}).unwrap();
    let split = dir.path().join("train");
    let summary = python_summary(&split, shape);
    let ds = Dataset::open(&split, 1, None).unwrap();
    assert_eq!(summary.len(), ds.total_records());
    let mut k = 0;
    for (f, reader) in ds.files().iter().enumerate() {
        for i in 0..reader.len() {
            let want = &summary[k];
            k += 1;
            let got = ds.read_record(f, i).unwrap();
            assert_eq!(want["file"].as_str().unwrap(), reader.path().file_name().unwrap().to_str().unwrap());
            assert_eq!(want["sequence_length"].as_u64().unwrap() as usize, got.sequence_length);
            assert_eq!(
                want["frame_sum"].as_u64().unwrap(),
                got.raw_video.iter().map(|&b| b as u64).sum::<u64>()
            );
            let last = &got.raw_video[got.raw_video.len() - shape.frame_bytes()..][..3];
            let want_last: Vec<u8> =
                want["last_pixel"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
            assert_eq!(last, &want_last[..]);
            let actions: Vec<i64> =
                want["actions"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
            assert_eq!(actions, got.actions.unwrap().values);
            assert_eq!(want["actions_dtype"], "int64");
        }
    }
}

fn python_summary(split: &Path, shape: FrameShape) -> Vec<Value> {
    let dims = [shape.height, shape.width, shape.channels].map(|d| d.to_string());
    let mut args = vec![split.to_str().unwrap()];
    args.extend(dims.iter().map(String::as_str));
    serde_json::from_str(&common::run_python("summarize_dataset.py", &args)).unwrap()
}

#[test]
fn hostile_pickle_inside_a_file_is_named_by_file_record_and_offset() {
    // pickle.dumps of a dict whose value calls posix.system: the reader must refuse the global.
    let hostile = std::fs::read(fixtures().join("pickle/evil_os_system.p4.pickle")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.array_record");
    let mut w = jinn_data::array_record::ArrayRecordWriter::create(&path, Default::default()).unwrap();
    w.write_record(&hostile).unwrap();
    w.finish().unwrap();
    let ds = Dataset::open(&path, 1, Some(FrameShape::rgb(4, 4)));
    let err = match ds {
        Err(e) => e.to_string(),
        Ok(ds) => ds.read_record(0, 0).unwrap_err().to_string(),
    };
    assert!(err.contains("bad.array_record") && err.contains("record 0"), "{err}");
    assert!(err.contains("offset") && err.contains("system"), "{err}");
}
