//! `jinn data gen`: roll out a built-in environment under the sticky random policy (optionally
//! mixed with the game's scripted player) and write
//! the episodes as a Jasmine-layout dataset (`train/`, `val/`, `test/` of ArrayRecord files
//! plus `metadata.json`).
//!
//! Everything written is a pure function of the configuration minus `threads`: episode `i` is
//! simulated from a seed derived from `(seed, "episode", i)`, episodes are assigned to splits
//! by index (the first ones to train, then val, then test), and they are written in index
//! order whatever order the worker threads finish them in.

use crate::array_record::WriterOptions;
use crate::envs::policy::{
    check_probability, check_sticky_prob, GuidedPolicy, StickyRandomPolicy, DEFAULT_STICKY_PROB,
};
use crate::envs::{check_env_name, check_frame_shape, make_env};
use crate::episode::{ActionArray, FrameShape};
use crate::error::{DataError, Result};
use crate::metadata::DatasetMetadata;
use crate::output_dir::prepare_output_dir;
use crate::rng::derive_seed;
use crate::split_writer::SplitWriter;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{mpsc, Condvar, Mutex};

/// Split directory names, in the order episodes are assigned to them.
pub const SPLITS: [&str; 3] = ["train", "val", "test"];

/// Simulations of one episode index before giving up on reaching `min_episode_len`.
pub const MAX_ATTEMPTS: u64 = 100;

/// Largest episode a worker may hold in memory (`max_episode_len` frames), in bytes.
pub const MAX_EPISODE_BYTES: usize = 1 << 30;

/// Settings of `jinn data gen`. Field docs name the command-line flag each one backs.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// Environment (`--env`), one of [`crate::envs::ENV_NAMES`]. Default `breakout`.
    pub env: String,
    /// Episodes in all splits together (`--episodes`). Default 1000.
    pub episodes: usize,
    /// Share of episodes for `val/` (`--val-fraction`). Default 0.05: with 1000 episodes,
    /// 50 episodes (≈12k frames) measure validation loss well while keeping 90% to train on.
    pub val_fraction: f64,
    /// Share of episodes for `test/` (`--test-fraction`). Default 0.05.
    pub test_fraction: f64,
    /// Seed every episode derives from (`--seed`). Default 0.
    pub seed: u64,
    /// Rendered frame size (`--height`, `--width`). Default 64×64 RGB.
    pub frame_shape: FrameShape,
    /// Episodes that end before this many frames are discarded and simulated again from a
    /// new seed, as Jasmine's generators do (`--min-episode-len`). Default 160, one full
    /// chunk; random-policy breakout episodes last about 170–380 frames.
    pub min_episode_len: usize,
    /// Episodes are cut after this many frames (`--max-episode-len`). Default 400.
    pub max_episode_len: usize,
    /// Frames per record (`--chunk-len`). Default 160, as Jasmine.
    pub chunk_len: usize,
    /// Records per ArrayRecord file (`--chunks-per-file`). Default 100, as Jasmine.
    pub chunks_per_file: usize,
    /// Probability that the policy repeats its previous action (`--sticky-prob`). Default
    /// [`DEFAULT_STICKY_PROB`].
    pub sticky_prob: f64,
    /// Probability that a step takes the game's scripted action ([`crate::envs::Env::guide_action`];
    /// breakout: follow the ball) instead of the random policy's (`--follow-prob`). Default 0.
    pub follow_prob: f64,
    /// Simulation threads (`--threads`); 0 uses every core. Does not change the output.
    pub threads: usize,
    /// ArrayRecord writer settings.
    pub writer_options: WriterOptions,
    /// Replace a dataset already in the output directory (`--overwrite`).
    pub overwrite: bool,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            env: "breakout".to_string(),
            episodes: 1000,
            val_fraction: 0.05,
            test_fraction: 0.05,
            seed: 0,
            frame_shape: FrameShape::rgb(64, 64),
            min_episode_len: 160,
            max_episode_len: 400,
            chunk_len: 160,
            chunks_per_file: 100,
            sticky_prob: DEFAULT_STICKY_PROB,
            follow_prob: 0.0,
            threads: 0,
            writer_options: WriterOptions::default(),
            overwrite: false,
        }
    }
}

impl GenerateConfig {
    /// Check every setting; errors name the flag at fault.
    pub fn validate(&self) -> Result<()> {
        check_env_name(&self.env)?;
        if self.episodes == 0 {
            return Err(DataError::invalid("--episodes", "must be at least 1"));
        }
        for (flag, f) in [("--val-fraction", self.val_fraction), ("--test-fraction", self.test_fraction)] {
            if !(0.0..1.0).contains(&f) {
                return Err(DataError::invalid(flag, format!("{f}; expected a fraction in [0, 1)")));
            }
        }
        split_counts(self.episodes, self.val_fraction, self.test_fraction)?;
        check_frame_shape(self.frame_shape)?;
        if self.min_episode_len == 0 {
            return Err(DataError::invalid("--min-episode-len", "must be at least 1"));
        }
        if self.max_episode_len < self.min_episode_len {
            return Err(DataError::invalid(
                "--max-episode-len",
                format!("{} is below --min-episode-len {}", self.max_episode_len, self.min_episode_len),
            ));
        }
        let episode_bytes = self.max_episode_len.saturating_mul(self.frame_shape.frame_bytes());
        if episode_bytes > MAX_EPISODE_BYTES {
            return Err(DataError::invalid(
                "--max-episode-len",
                format!(
                    "{} frames of {}x{} take {episode_bytes} bytes per episode in memory; at most {MAX_EPISODE_BYTES}",
                    self.max_episode_len, self.frame_shape.height, self.frame_shape.width
                ),
            ));
        }
        if self.chunk_len == 0 {
            return Err(DataError::invalid("--chunk-len", "must be at least 1"));
        }
        if self.chunks_per_file == 0 {
            return Err(DataError::invalid("--chunks-per-file", "must be at least 1"));
        }
        check_sticky_prob(self.sticky_prob)?;
        check_probability("--follow-prob", self.follow_prob)
    }

    /// Worker threads to use: `threads`, or every core when 0, never more than `episodes`.
    pub fn worker_threads(&self) -> usize {
        let n = match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        n.clamp(1, self.episodes.max(1))
    }
}

/// Episodes per split `[train, val, test]`: val and test get their fraction of `episodes`,
/// rounded, but at least one episode when their fraction is positive; train gets the rest
/// and must get at least one.
pub fn split_counts(episodes: usize, val_fraction: f64, test_fraction: f64) -> Result<[usize; 3]> {
    let share = |f: f64| if f > 0.0 { ((episodes as f64 * f).round() as usize).max(1) } else { 0 };
    let (val, test) = (share(val_fraction), share(test_fraction));
    match episodes.checked_sub(val + test) {
        Some(train) if train > 0 => Ok([train, val, test]),
        _ => Err(DataError::invalid(
            "--episodes",
            format!(
                "{episodes} episodes leave none to train on after {val} for validation \
                 (--val-fraction {val_fraction}) and {test} for testing (--test-fraction {test_fraction})"
            ),
        )),
    }
}

/// Index into [`SPLITS`] of episode `index`, given the per-split counts.
pub fn split_of(index: usize, counts: [usize; 3]) -> usize {
    if index < counts[0] {
        0
    } else if index < counts[0] + counts[1] {
        1
    } else {
        2
    }
}

/// One simulated episode, as it will be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatedEpisode {
    /// `[T, H, W, 3]` u8.
    pub frames: Vec<u8>,
    /// `[T]`: the action taken after observing frame `t`.
    pub actions: Vec<i64>,
    /// Simulations that ended before `min_episode_len` and were discarded first.
    pub discarded: u64,
}

impl SimulatedEpisode {
    /// Frames in the episode.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// True for an episode without frames (never produced by [`simulate_episode`]).
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// Simulate episode `index` of `cfg` (assumed valid): attempt `k` runs the environment reset
/// with a seed derived from `(seed, "episode", index)` and `k` under the sticky random policy
/// (mixed with the game's guide at `follow_prob`),
/// until the episode ends or reaches `max_episode_len` frames; attempts ending before
/// `min_episode_len` frames are discarded.
pub fn simulate_episode(cfg: &GenerateConfig, index: u64) -> Result<SimulatedEpisode> {
    let base = derive_seed(cfg.seed, "episode", index);
    let frame_bytes = cfg.frame_shape.frame_bytes();
    let mut longest = 0;
    for attempt in 0..MAX_ATTEMPTS {
        let mut env = make_env(&cfg.env, cfg.frame_shape, derive_seed(base, "env", attempt))?;
        let random = StickyRandomPolicy::new(
            env.num_actions(),
            cfg.sticky_prob,
            derive_seed(base, "policy", attempt),
        )?;
        let mut policy = GuidedPolicy::new(random, cfg.follow_prob, derive_seed(base, "follow", attempt))?;
        let mut frames = Vec::with_capacity(cfg.max_episode_len * frame_bytes); // [T, H, W, 3] u8
        let mut actions = Vec::with_capacity(cfg.max_episode_len);
        loop {
            let start = frames.len();
            frames.resize(start + frame_bytes, 0);
            env.render(&mut frames[start..]);
            let action = policy.act(env.guide_action());
            actions.push(action as i64);
            let done = env.step(action)?.done;
            if done || actions.len() == cfg.max_episode_len {
                break;
            }
        }
        if actions.len() >= cfg.min_episode_len {
            return Ok(SimulatedEpisode { frames, actions, discarded: attempt });
        }
        longest = longest.max(actions.len());
    }
    Err(DataError::invalid(
        "--min-episode-len",
        format!(
            "{} episode {index}: all {MAX_ATTEMPTS} attempts ended before {} frames (the longest had {longest}); \
             lower --min-episode-len",
            cfg.env, cfg.min_episode_len
        ),
    ))
}

/// Progress of [`generate_dataset`], reported after each episode written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenProgress {
    /// Episodes written so far.
    pub episodes_done: usize,
    /// Episodes to write in all.
    pub episodes_total: usize,
    /// Frames written so far.
    pub frames_done: usize,
    /// Simulations discarded so far for ending before `min_episode_len`.
    pub discarded: u64,
    /// Split the last episode went to.
    pub split: &'static str,
}

/// Generate the dataset described by `cfg` into `out_dir` and return its metadata (also
/// saved as `out_dir/metadata.json`, written last). `out_dir` must be missing or empty unless
/// `cfg.overwrite` is set; see [`crate::output_dir::clear_dataset`] for what overwriting removes. Splits with no
/// episode get no directory. A run that fails part-way leaves the files written so far but no
/// `metadata.json`, so the incomplete dataset is never mistaken for a finished one.
pub fn generate_dataset(
    cfg: &GenerateConfig,
    out_dir: &Path,
    progress: &mut dyn FnMut(GenProgress),
) -> Result<DatasetMetadata> {
    cfg.validate()?;
    let counts = split_counts(cfg.episodes, cfg.val_fraction, cfg.test_fraction)?;
    prepare_output_dir(out_dir, cfg.overwrite)?;
    let mut writers = Vec::new();
    for (name, &count) in SPLITS.iter().zip(&counts) {
        writers.push(match count {
            0 => None,
            _ => Some(SplitWriter::create(out_dir, name, cfg.chunks_per_file, cfg.writer_options)?),
        });
    }
    let mut done = GenProgress {
        episodes_done: 0,
        episodes_total: cfg.episodes,
        frames_done: 0,
        discarded: 0,
        split: SPLITS[0],
    };
    for_each_in_order(
        cfg.episodes,
        cfg.worker_threads(),
        &|i| simulate_episode(cfg, i as u64),
        &mut |i, episode: SimulatedEpisode| {
            let split = split_of(i, counts);
            let writer = writers[split].as_mut().expect("a split with episodes has a writer");
            let actions = ActionArray::from_i64(episode.actions);
            writer.write_episode(&episode.frames, cfg.frame_shape, Some(&actions), cfg.chunk_len, None)?;
            done.episodes_done += 1;
            done.frames_done += actions.steps();
            done.discarded += episode.discarded;
            done.split = SPLITS[split];
            progress(done);
            Ok(())
        },
    )?;
    let probe = make_env(&cfg.env, cfg.frame_shape, 0)?;
    let mut meta = DatasetMetadata::new(&cfg.env, Some(probe.num_actions()), cfg.frame_shape);
    for (name, writer) in SPLITS.iter().zip(writers) {
        if let Some(writer) = writer {
            meta.set_split(name, writer.finish()?);
        }
    }
    meta.extra.insert("action_names".into(), json!(probe.action_names()));
    meta.extra.insert(
        "generator".into(),
        json!({
            "command": "jinn data gen",
            "policy": if cfg.follow_prob > 0.0 { "sticky_random+guide" } else { "sticky_random" },
            "seed": cfg.seed,
            "episodes": cfg.episodes,
            "val_fraction": cfg.val_fraction,
            "test_fraction": cfg.test_fraction,
            "min_episode_len": cfg.min_episode_len,
            "max_episode_len": cfg.max_episode_len,
            "chunk_len": cfg.chunk_len,
            "chunks_per_file": cfg.chunks_per_file,
            "sticky_prob": cfg.sticky_prob,
            "follow_prob": cfg.follow_prob,
            "discarded_episodes": done.discarded,
            "compression": format!("{:?}", cfg.writer_options.compression),
        }),
    );
    meta.save(out_dir)?;
    Ok(meta)
}

/// Claim state shared by the workers of [`for_each_in_order`].
struct Claims {
    /// Next index to hand out.
    next: usize,
    /// Indices below this have been consumed.
    consumed: usize,
    /// Set when the consumer stops early (error or panic): workers quit.
    stop: bool,
}

/// Sets `stop` and wakes every worker when dropped, even while unwinding from a panic, so a
/// failing consumer never leaves workers waiting forever.
struct StopOnDrop<'a>(&'a Mutex<Claims>, &'a Condvar);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
        self.1.notify_all();
    }
}

/// Run `produce(i)` for `i in 0..count` on `threads` threads and feed the results to
/// `consume` in index order. At most `2 · threads` results are produced ahead of the one
/// being consumed, bounding memory. The first error (from either side) stops the run and is
/// returned; a panic in `produce` becomes an error.
pub fn for_each_in_order<T: Send>(
    count: usize,
    threads: usize,
    produce: &(dyn Fn(usize) -> Result<T> + Sync),
    consume: &mut dyn FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    let threads = threads.max(1);
    let window = 2 * threads;
    let claims = Mutex::new(Claims { next: 0, consumed: 0, stop: false });
    let wake = Condvar::new();
    let (tx, rx) = mpsc::channel::<(usize, Result<T>)>();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (tx, claims, wake) = (tx.clone(), &claims, &wake);
            scope.spawn(move || loop {
                let index = {
                    let mut c = claims.lock().unwrap_or_else(|e| e.into_inner());
                    while !c.stop && c.next < count && c.next >= c.consumed + window {
                        c = wake.wait(c).unwrap_or_else(|e| e.into_inner());
                    }
                    if c.stop || c.next >= count {
                        return;
                    }
                    c.next += 1;
                    c.next - 1
                };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| produce(index)))
                    .unwrap_or_else(|panic| {
                        let msg = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        Err(DataError::invalid(
                            format!("episode {index}"),
                            format!("simulation panicked: {msg}"),
                        ))
                    });
                if tx.send((index, result)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let _stop = StopOnDrop(&claims, &wake);
        let mut pending = BTreeMap::new();
        let mut next = 0;
        for (index, result) in rx.iter() {
            pending.insert(index, result);
            while let Some(result) = pending.remove(&next) {
                consume(next, result?)?;
                next += 1;
                claims.lock().unwrap_or_else(|e| e.into_inner()).consumed = next;
                wake.notify_all();
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
