//! Loader behaviour on a real dataset written to disk: determinism, thread-count
//! independence, exact resume, window contents, filtering of short records.

use jinn_data::array_record::WriterOptions;
use jinn_data::dataset::Dataset;
use jinn_data::loader::{Batch, Loader, LoaderConfig};
use jinn_data::metadata::DatasetMetadata;
use jinn_data::split_writer::SplitWriter;
use jinn_data::{ActionArray, FrameShape};
use std::path::Path;
use std::sync::Arc;

const SHAPE: FrameShape = FrameShape { height: 4, width: 6, channels: 3 };

/// Frame `t` of episode `e` has every byte equal to `(e * 50 + t) % 256`, and action `e*1000+t`,
/// so a batch can be checked against its stated origin.
fn write_dataset(dir: &Path, episode_lens: &[usize], chunk_len: usize) {
    let mut w = SplitWriter::create(dir, "train", 3, WriterOptions::default()).unwrap();
    for (e, &len) in episode_lens.iter().enumerate() {
        let frames: Vec<u8> = (0..len)
            .flat_map(|t| std::iter::repeat_n(((e * 50 + t) % 256) as u8, SHAPE.frame_bytes()))
            .collect();
        let actions = ActionArray::from_i64((0..len).map(|t| (e * 1000 + t) as i64).collect());
        w.write_episode(&frames, SHAPE, Some(&actions), chunk_len, None).unwrap();
    }
    let stats = w.finish().unwrap();
    let mut meta = DatasetMetadata::new("test", Some(8), SHAPE);
    meta.set_split("train", stats);
    meta.save(dir).unwrap();
}

fn open(dir: &Path, seq_len: usize) -> Arc<Dataset> {
    Arc::new(Dataset::open(&dir.join("train"), seq_len, None).unwrap())
}

fn take(loader: &mut Loader, n: usize) -> Vec<Batch> {
    loader.by_ref().take(n).map(|b| b.unwrap()).collect()
}

fn config(seed: u64, threads: usize) -> LoaderConfig {
    LoaderConfig { batch_size: 3, seq_len: 5, seed, threads, prefetch: 2, ..Default::default() }
}

#[test]
fn batches_match_their_origins_and_short_records_are_filtered() {
    let dir = tempfile::tempdir().unwrap();
    // chunk 10 → records of 10,10,3 | 10,2 | 7 ; seq_len 5 drops the 3- and 2-frame records.
    write_dataset(dir.path(), &[23, 12, 7], 10);
    let ds = open(dir.path(), 5);
    assert_eq!(ds.total_records(), 6);
    assert_eq!(ds.skipped_short(), 2);
    let mut loader = Loader::new(ds.clone(), config(1, 2)).unwrap();
    for batch in take(&mut loader, 7) {
        assert_eq!(batch.videos.len(), 3 * 5 * SHAPE.frame_bytes());
        let actions = batch.actions.as_ref().unwrap();
        assert_eq!(batch.action_dims, 1);
        for (i, o) in batch.origins.iter().enumerate() {
            for t in 0..5 {
                let frame = &batch.videos[(i * 5 + t) * SHAPE.frame_bytes()..][..SHAPE.frame_bytes()];
                let action = actions[i * 5 + t];
                let (episode, step) = (action / 1000, action % 1000);
                assert_eq!(frame[0] as i64, (episode * 50 + step) % 256);
                assert!(frame.iter().all(|&b| b == frame[0]));
                // consecutive frames of one clip are consecutive frames of the episode
                if t > 0 {
                    assert_eq!(action, actions[i * 5 + t - 1] + 1);
                }
            }
            assert!(o.start + 5 <= o.record.len as usize);
        }
    }
}

#[test]
fn same_seed_same_batches_other_seed_other_batches_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[40, 33, 25, 18], 8);
    let ds = open(dir.path(), 5);
    let a = take(&mut Loader::new(ds.clone(), config(7, 0)).unwrap(), 12);
    let b = take(&mut Loader::new(ds.clone(), config(7, 3)).unwrap(), 12);
    let c = take(&mut Loader::new(ds.clone(), config(8, 2)).unwrap(), 12);
    assert_eq!(a, b);
    assert_ne!(
        a.iter().map(|x| &x.videos).collect::<Vec<_>>(),
        c.iter().map(|x| &x.videos).collect::<Vec<_>>()
    );
}

#[test]
fn resume_mid_epoch_equals_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[40, 33, 25, 18], 8);
    let ds = open(dir.path(), 5);
    let full = take(&mut Loader::new(ds.clone(), config(3, 2)).unwrap(), 10);
    let mut first = Loader::new(ds.clone(), config(3, 2)).unwrap();
    let head = take(&mut first, 4);
    // The position survives serialisation, as it does inside a checkpoint.
    let saved = serde_json::to_string(&first.position()).unwrap();
    drop(first);
    let position = serde_json::from_str(&saved).unwrap();
    let tail = take(&mut Loader::resume(ds.clone(), config(3, 1), Some(&position)).unwrap(), 6);
    assert_eq!(head[..], full[..4]);
    for (t, f) in tail.iter().zip(&full[4..]) {
        assert_eq!((&t.videos, &t.actions, &t.origins), (&f.videos, &f.actions, &f.origins));
    }
}

#[test]
fn resume_with_another_world_size_reshards_the_same_stream() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[40, 33, 25, 18], 8);
    let ds = open(dir.path(), 5);
    let single = LoaderConfig { batch_size: 4, ..config(11, 1) };
    let full: Vec<u64> = take(&mut Loader::new(ds.clone(), single).unwrap(), 6)
        .iter()
        .flat_map(|b| b.origins.iter().map(|o| o.sample))
        .collect();
    let mut first = Loader::new(ds.clone(), single).unwrap();
    take(&mut first, 2);
    let pos = first.position();
    let mut ranks: Vec<Loader> = (0..2)
        .map(|rank| {
            Loader::resume(
                ds.clone(),
                LoaderConfig { batch_size: 2, rank, world_size: 2, ..single },
                Some(&pos),
            )
            .unwrap()
        })
        .collect();
    let mut merged = vec![];
    for _ in 0..4 {
        for r in ranks.iter_mut() {
            merged.extend(r.next().unwrap().unwrap().origins.iter().map(|o| o.sample));
        }
    }
    assert_eq!(merged, full[8..]);
}

#[test]
fn mismatched_position_and_impossible_seq_len_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[12], 12);
    let ds = open(dir.path(), 5);
    let loader = Loader::new(ds.clone(), config(1, 0)).unwrap();
    let pos = loader.position();
    let err = Loader::resume(ds.clone(), config(2, 0), Some(&pos)).err().unwrap().to_string();
    assert!(err.contains("loader position") && err.contains("seed"), "{err}");
    let long = Arc::new(Dataset::open(&dir.path().join("train"), 50, None).unwrap());
    let err = Loader::new(long, LoaderConfig { seq_len: 50, ..config(1, 0) }).err().unwrap().to_string();
    assert!(err.contains("--seq-len") && err.contains("50"), "{err}");
    let err = Dataset::open(&dir.path().join("nothing"), 5, None).err().unwrap().to_string();
    assert!(err.contains("nothing"), "{err}");
}

/// Every split names its first file `data_0000.array_record`; with equal record counts the
/// lengths must still come from the split's own entry in `metadata.json`, not another split's.
#[test]
fn record_lengths_come_from_the_splits_own_metadata_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut meta = DatasetMetadata::new("test", Some(8), SHAPE);
    for (split, lens) in [("test", [9usize, 4]), ("val", [5, 8])] {
        let mut w = SplitWriter::create(dir.path(), split, 3, WriterOptions::default()).unwrap();
        for &len in &lens {
            let frames = vec![7u8; len * SHAPE.frame_bytes()];
            w.write_episode(&frames, SHAPE, None, 100, None).unwrap();
        }
        meta.set_split(split, w.finish().unwrap());
    }
    meta.save(dir.path()).unwrap();
    for (split, want) in [("test", [9u32, 4]), ("val", [5, 8])] {
        let ds = Dataset::open(&dir.path().join(split), 1, None).unwrap();
        let got: Vec<u32> = ds.records().iter().map(|r| r.len).collect();
        assert_eq!(got, want, "{split}");
        for r in ds.records() {
            assert_eq!(
                ds.read_record(r.file as usize, r.record as u64).unwrap().sequence_length,
                r.len as usize
            );
        }
    }
}
