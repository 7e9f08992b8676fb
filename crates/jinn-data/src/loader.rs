//! The training batch loader: seeded index shuffling, per-rank sharding, random windows,
//! background prefetch, and a serialisable position for exact resume.
//!
//! The sample stream is one global sequence, a pure function of the seed:
//! global sample `g` belongs to epoch `e = g / N` (N usable records) and is record
//! `perm_e[g % N]`, where `perm_e` is a permutation drawn from (seed, "epoch", e); its window
//! start is drawn from (seed, "window", g). Global batch `s` holds samples
//! `s·B·W .. (s+1)·B·W` (B per-rank batch, W world size) and rank `r` takes the `r`-th
//! slice of `B`. So every record is seen exactly once per epoch across all ranks, the
//! position is one number (the next global sample), and resuming with another world size
//! continues the same global stream, re-sharded.

use crate::dataset::{Dataset, RecordRef, Window};
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use crate::rng::rng_for;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How batches are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderConfig {
    /// Samples per batch on this rank.
    pub batch_size: usize,
    /// Frames per sample (`T`).
    pub seq_len: usize,
    /// Seed of the shuffle and window draws.
    pub seed: u64,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub world_size: usize,
    /// Worker threads decoding batches in the background (0 = decode on the caller's thread).
    pub threads: usize,
    /// Batches each worker may run ahead.
    pub prefetch: usize,
}

impl Default for LoaderConfig {
    fn default() -> Self {
        LoaderConfig { batch_size: 8, seq_len: 16, seed: 0, rank: 0, world_size: 1, threads: 2, prefetch: 2 }
    }
}

impl LoaderConfig {
    fn validate(&self) -> Result<()> {
        let checks = [
            (self.batch_size == 0, "--batch-size", "must be at least 1".to_string()),
            (self.seq_len == 0, "--seq-len", "must be at least 1".to_string()),
            (self.world_size == 0, "--world-size", "must be at least 1".to_string()),
            (
                self.rank >= self.world_size,
                "--rank",
                format!("{} is not below --world-size {}", self.rank, self.world_size),
            ),
        ];
        match checks.into_iter().find(|c| c.0) {
            Some((_, what, why)) => Err(DataError::invalid(what, why)),
            None => Ok(()),
        }
    }

    /// Samples per global batch (all ranks).
    pub fn global_batch(&self) -> u64 {
        (self.batch_size * self.world_size) as u64
    }
}

/// Where a loader stands: enough to resume with exactly the batches an uninterrupted run
/// would have produced. Saved in checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderPosition {
    /// Seed of the stream.
    pub seed: u64,
    /// Frames per sample of the stream.
    pub seq_len: usize,
    /// Usable records of the dataset the stream was drawn over (guards against resuming on
    /// different data).
    pub num_records: usize,
    /// The next global sample to draw.
    pub next_sample: u64,
}

/// One sample's origin, for debugging and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleOrigin {
    /// Global sample number.
    pub sample: u64,
    /// Record it came from.
    pub record: RecordRef,
    /// First frame of the window.
    pub start: usize,
}

/// A batch of clips.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// `[B, T, H, W, C]` u8.
    pub videos: Vec<u8>,
    /// `[B, T, k]` actions (row-major), when the records carry actions.
    pub actions: Option<Vec<i64>>,
    /// `k`, values per action step (0 without actions).
    pub action_dims: usize,
    /// Samples in the batch (`B`).
    pub batch_size: usize,
    /// Frames per sample (`T`).
    pub seq_len: usize,
    /// Frame shape (`H, W, C`).
    pub frame_shape: FrameShape,
    /// Batch number since the loader started or resumed.
    pub step: u64,
    /// Where each sample came from.
    pub origins: Vec<SampleOrigin>,
}

/// Deterministic description of the sample stream over a dataset.
#[derive(Clone)]
pub struct SampleStream {
    records: Arc<[RecordRef]>,
    seed: u64,
    seq_len: usize,
    // The last few epoch permutations, so consecutive lookups don't recompute them.
    perms: HashMap<u64, Arc<Vec<u32>>>,
}

impl SampleStream {
    /// The stream over `records` for `seed` and windows of `seq_len` frames.
    pub fn new(records: Arc<[RecordRef]>, seed: u64, seq_len: usize) -> Self {
        SampleStream { records, seed, seq_len, perms: HashMap::new() }
    }

    /// Record order of `epoch`: a Fisher–Yates permutation drawn from (seed, "epoch", epoch).
    pub fn permutation(&mut self, epoch: u64) -> Arc<Vec<u32>> {
        if let Some(p) = self.perms.get(&epoch) {
            return p.clone();
        }
        let mut rng = rng_for(self.seed, "epoch", epoch);
        let mut perm: Vec<u32> = (0..self.records.len() as u32).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.random_range(0..=i));
        }
        if self.perms.len() >= 4 {
            self.perms.clear();
        }
        let perm = Arc::new(perm);
        self.perms.insert(epoch, perm.clone());
        perm
    }

    /// Record and window start of global sample `g`.
    pub fn sample(&mut self, g: u64) -> SampleOrigin {
        let n = self.records.len() as u64;
        let perm = self.permutation(g / n);
        let record = self.records[perm[(g % n) as usize] as usize];
        let slack = record.len as usize - self.seq_len;
        let start = rng_for(self.seed, "window", g).random_range(0..=slack);
        SampleOrigin { sample: g, record, start }
    }

    /// The samples this rank draws for batch `step` of a stream starting at global sample
    /// `origin` (0, or a resume point).
    pub fn batch_origins(&mut self, config: &LoaderConfig, origin: u64, step: u64) -> Vec<SampleOrigin> {
        let first = origin + step * config.global_batch() + (config.rank * config.batch_size) as u64;
        (first..first + config.batch_size as u64).map(|g| self.sample(g)).collect()
    }
}

/// Decode this rank's batch `step` of the stream starting at global sample `origin`.
pub fn load_batch(
    dataset: &Dataset,
    stream: &mut SampleStream,
    config: &LoaderConfig,
    origin: u64,
    step: u64,
) -> Result<Batch> {
    load_batch_with(dataset, stream, config, origin, step, &mut Vec::new())
}

/// [`load_batch`] reusing `scratch` for decompressed records.
fn load_batch_with(
    dataset: &Dataset,
    stream: &mut SampleStream,
    config: &LoaderConfig,
    origin: u64,
    step: u64,
    scratch: &mut Vec<u8>,
) -> Result<Batch> {
    let origins = stream.batch_origins(config, origin, step);
    let shape = dataset.frame_shape();
    let clip_bytes = config.seq_len * shape.frame_bytes();
    let mut videos = Vec::with_capacity(config.batch_size * clip_bytes); // [B, T, H, W, C]
    let mut actions: Option<Vec<i64>> = None; // [B, T, k]
    let mut action_dims = 0;
    for (i, o) in origins.iter().enumerate() {
        let Window { frames, actions: a, action_dims: k } =
            dataset.read_window_with(o.record, o.start, config.seq_len, scratch)?;
        videos.extend_from_slice(&frames);
        match (i, a, &mut actions) {
            (0, Some(a), acc) => {
                action_dims = k;
                let mut v = Vec::with_capacity(config.batch_size * config.seq_len * k);
                v.extend_from_slice(&a);
                *acc = Some(v);
            }
            (_, Some(a), Some(acc)) if k == action_dims => acc.extend_from_slice(&a),
            (_, None, None) => {}
            _ => {
                let path = dataset.files()[o.record.file as usize].path().to_path_buf();
                return Err(DataError::Record {
                    path,
                    index: o.record.record as u64,
                    reason: "records in this dataset disagree on whether (or how many) actions they carry; \
                             every record must have actions of the same width, or none"
                        .into(),
                });
            }
        }
    }
    Ok(Batch {
        videos,
        actions,
        action_dims,
        batch_size: config.batch_size,
        seq_len: config.seq_len,
        frame_shape: shape,
        step,
        origins,
    })
}

/// Iterator of batches with background prefetch. Batch `s` is the same whatever the thread
/// count; [`Loader::position`] after any batch resumes the stream exactly there.
pub struct Loader {
    dataset: Arc<Dataset>,
    config: LoaderConfig,
    next_step: u64,
    // Global sample where the stream started (a resume point need not be a batch boundary
    // of the current world size).
    origin_sample: u64,
    stream: SampleStream,
    workers: Vec<(Receiver<Result<Batch>>, JoinHandle<()>)>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Loader {
    /// A loader at the start of the stream.
    pub fn new(dataset: Arc<Dataset>, config: LoaderConfig) -> Result<Self> {
        Self::resume(dataset, config, None)
    }

    /// A loader continuing from `position` (or from the start when `None`). The position
    /// must come from a stream with the same seed, window length and dataset.
    pub fn resume(
        dataset: Arc<Dataset>,
        config: LoaderConfig,
        position: Option<&LoaderPosition>,
    ) -> Result<Self> {
        config.validate()?;
        if dataset.records().is_empty() {
            return Err(DataError::invalid(
                "--seq-len",
                format!(
                    "no record in {} has at least {} frames ({} records, all shorter)",
                    dataset.root().display(),
                    config.seq_len,
                    dataset.total_records()
                ),
            ));
        }
        if let Some(r) = dataset.records().iter().find(|r| (r.len as usize) < config.seq_len) {
            return Err(DataError::invalid(
                "--seq-len",
                format!(
                    "{} exceeds the {} frames of an indexed record; open the dataset with this length",
                    config.seq_len, r.len
                ),
            ));
        }
        let origin_sample = match position {
            None => 0,
            Some(p) => {
                let expected = (config.seed, config.seq_len, dataset.records().len());
                if (p.seed, p.seq_len, p.num_records) != expected {
                    return Err(DataError::invalid(
                        "loader position",
                        format!(
                            "saved for seed {}, seq_len {}, {} records; this run has seed {}, seq_len {}, {} records",
                            p.seed, p.seq_len, p.num_records, expected.0, expected.1, expected.2
                        ),
                    ));
                }
                p.next_sample
            }
        };
        let stream = SampleStream::new(dataset.records().into(), config.seed, config.seq_len);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut loader =
            Loader { dataset, config, next_step: 0, origin_sample, stream, workers: Vec::new(), stop };
        loader.spawn_workers();
        Ok(loader)
    }

    /// The configuration.
    pub fn config(&self) -> &LoaderConfig {
        &self.config
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.dataset
    }

    /// Position after the last batch returned: pass it to [`Loader::resume`].
    pub fn position(&self) -> LoaderPosition {
        LoaderPosition {
            seed: self.config.seed,
            seq_len: self.config.seq_len,
            num_records: self.dataset.records().len(),
            next_sample: self.origin_sample + self.next_step * self.config.global_batch(),
        }
    }

    /// Epoch (passes over the usable records) the next batch starts in.
    pub fn epoch(&self) -> u64 {
        self.position().next_sample / self.dataset.records().len() as u64
    }

    fn spawn_workers(&mut self) {
        for w in 0..self.config.threads {
            let (tx, rx) = sync_channel(self.config.prefetch.max(1));
            let dataset = self.dataset.clone();
            let mut stream = self.stream.clone();
            let config = self.config;
            let origin = self.origin_sample;
            let stop = self.stop.clone();
            let threads = self.config.threads as u64;
            let handle = std::thread::Builder::new()
                .name(format!("jinn-loader-{w}"))
                .spawn(move || {
                    let mut step = w as u64;
                    let mut scratch = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let batch =
                            load_batch_with(&dataset, &mut stream, &config, origin, step, &mut scratch);
                        if tx.send(batch).is_err() {
                            break;
                        }
                        step += threads;
                    }
                })
                .expect("spawn loader thread");
            self.workers.push((rx, handle));
        }
    }
}

impl Iterator for Loader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        let step = self.next_step;
        let batch = if self.workers.is_empty() {
            load_batch(&self.dataset, &mut self.stream, &self.config, self.origin_sample, step)
        } else {
            let (rx, _) = &self.workers[(step % self.workers.len() as u64) as usize];
            rx.recv()
                .unwrap_or_else(|_| Err(DataError::invalid("loader", "a worker thread stopped unexpectedly")))
        };
        self.next_step += 1;
        Some(batch)
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for (rx, handle) in self.workers.drain(..) {
            drop(rx); // unblocks a worker waiting to send
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(lens: &[u32]) -> Arc<[RecordRef]> {
        lens.iter().enumerate().map(|(i, &len)| RecordRef { file: 0, record: i as u32, len }).collect()
    }

    #[test]
    fn each_epoch_visits_every_record_once_across_ranks() {
        let recs = records(&[20; 37]);
        for world in [1usize, 2, 3, 4] {
            let mut seen = vec![0u32; 37];
            let mut stream = SampleStream::new(recs.clone(), 9, 16);
            // 37 records, global batch 2·world: take enough steps to cover epoch 0 fully.
            let steps = 37u64.div_ceil(2 * world as u64);
            for rank in 0..world {
                let cfg = LoaderConfig {
                    batch_size: 2,
                    seq_len: 16,
                    seed: 9,
                    rank,
                    world_size: world,
                    ..Default::default()
                };
                for step in 0..steps {
                    for o in stream.batch_origins(&cfg, 0, step) {
                        if o.sample < 37 {
                            seen[o.record.record as usize] += 1;
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "world {world}: {seen:?}");
        }
    }

    #[test]
    fn permutations_depend_on_seed_and_epoch_only() {
        let recs = records(&[20; 50]);
        let mut a = SampleStream::new(recs.clone(), 1, 8);
        let mut b = SampleStream::new(recs.clone(), 1, 8);
        let mut c = SampleStream::new(recs, 2, 8);
        assert_eq!(a.permutation(3), b.permutation(3));
        assert_ne!(a.permutation(0), a.permutation(1));
        assert_ne!(a.permutation(0), c.permutation(0));
        let mut sorted = a.permutation(5).to_vec();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<u32>>());
    }

    #[test]
    fn windows_stay_inside_records_and_vary() {
        let recs = records(&[16, 17, 40]);
        let mut s = SampleStream::new(recs, 3, 16);
        let starts: Vec<_> = (0..300).map(|g| s.sample(g)).collect();
        assert!(starts.iter().all(|o| o.start + 16 <= o.record.len as usize));
        assert!(starts.iter().any(|o| o.record.len == 40 && o.start > 0));
        assert!(starts.iter().filter(|o| o.record.len == 16).all(|o| o.start == 0));
    }

    #[test]
    fn world_size_change_continues_the_global_stream() {
        let recs = records(&[30; 23]);
        let mut s = SampleStream::new(recs, 5, 4);
        let one = LoaderConfig { batch_size: 6, seq_len: 4, seed: 5, world_size: 1, ..Default::default() };
        let reference: Vec<u64> =
            (0..4).flat_map(|st| s.batch_origins(&one, 0, st)).map(|o| o.sample).collect();
        // Resume at sample 6 (after one batch) with 2 ranks of 3 → same global order.
        let mut merged = vec![];
        for step in 0..3 {
            for rank in 0..2 {
                let c = LoaderConfig { batch_size: 3, rank, world_size: 2, ..one };
                merged.extend(s.batch_origins(&c, 6, step).into_iter().map(|o| o.sample));
            }
        }
        assert_eq!(&reference[6..], &merged[..]);
    }

    #[test]
    fn invalid_configs_name_the_flag() {
        let bad = LoaderConfig { rank: 2, world_size: 2, ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("--rank"));
        let bad = LoaderConfig { batch_size: 0, ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("--batch-size"));
    }
}
