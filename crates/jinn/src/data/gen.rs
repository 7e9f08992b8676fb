//! `jinn data gen`: play a built-in game with a random sticky policy (optionally mixed with the
//! game's scripted player) and write the episodes.

use crate::args::{parse_frame_shape, writer_options, Codec};
use crate::progress::Progress;
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::FrameShape;
use std::path::PathBuf;

/// Arguments of `jinn data gen` (defaults from [`GenerateConfig::default`]).
#[derive(clap::Args)]
pub struct GenArgs {
    /// Environment: breakout or maze.
    #[arg(long, default_value = "breakout")]
    pub env: String,
    /// Episodes across all splits.
    #[arg(long, default_value_t = 1000)]
    pub episodes: usize,
    /// Output dataset directory (gets train/, val/, test/, metadata.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Frame size HxW.
    #[arg(long, default_value = "64x64", value_parser = parse_frame_shape)]
    pub size: FrameShape,
    /// Seed every episode derives from.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of episodes for val/.
    #[arg(long, default_value_t = 0.05)]
    pub val_fraction: f64,
    /// Share of episodes for test/.
    #[arg(long, default_value_t = 0.05)]
    pub test_fraction: f64,
    /// Shorter episodes are discarded and resampled.
    #[arg(long, default_value_t = 160)]
    pub min_episode_len: usize,
    /// Episodes are cut after this many frames.
    #[arg(long, default_value_t = 400)]
    pub max_episode_len: usize,
    /// Frames per record.
    #[arg(long, default_value_t = 160)]
    pub chunk_len: usize,
    /// Records per ArrayRecord file.
    #[arg(long, default_value_t = 100)]
    pub chunks_per_file: usize,
    /// Probability of repeating the previous action.
    #[arg(long, default_value_t = jinn_data::envs::policy::DEFAULT_STICKY_PROB)]
    pub sticky_prob: f64,
    /// Probability that a step takes the game's scripted action instead (breakout: follow the
    /// ball, which keeps it in play and shows more bounces and brick hits; maze: none).
    #[arg(long, default_value_t = 0.0)]
    pub follow_prob: f64,
    /// Simulation threads (0 = all cores); the output does not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub codec: Codec,
    /// Records per compressed chunk (1 = cheapest random access).
    #[arg(long, default_value_t = 1)]
    pub group_size: usize,
    /// Replace a dataset already in --out.
    #[arg(long)]
    pub overwrite: bool,
}

/// Generate a dataset.
pub fn run(a: GenArgs) -> anyhow::Result<()> {
    let cfg = GenerateConfig {
        env: a.env,
        episodes: a.episodes,
        val_fraction: a.val_fraction,
        test_fraction: a.test_fraction,
        seed: a.seed,
        frame_shape: a.size,
        min_episode_len: a.min_episode_len,
        max_episode_len: a.max_episode_len,
        chunk_len: a.chunk_len,
        chunks_per_file: a.chunks_per_file,
        sticky_prob: a.sticky_prob,
        follow_prob: a.follow_prob,
        threads: a.threads,
        writer_options: writer_options(a.codec, a.group_size),
        overwrite: a.overwrite,
    };
    let started = std::time::Instant::now();
    let progress = Progress::new(cfg.episodes as u64, "episodes");
    let meta = generate_dataset(&cfg, &a.out, &mut |p| {
        progress.set(p.episodes_done as u64, &format!("{} · {} frames", p.split, p.frames_done));
    })?;
    progress.finish();
    let secs = started.elapsed().as_secs_f64();
    let frames: usize = meta.splits.values().map(|s| s.num_frames).sum();
    for (name, s) in &meta.splits {
        println!(
            "{name}: {} episodes, {} frames, {} records in {} file(s)",
            s.num_episodes,
            s.num_frames,
            s.num_chunks,
            s.files.len()
        );
    }
    println!(
        "wrote {} ({} frames in {secs:.1}s, {:.0} frames/s)",
        a.out.display(),
        frames,
        frames as f64 / secs.max(1e-9)
    );
    Ok(())
}
