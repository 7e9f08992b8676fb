//! `jinn bench data`: how fast episodes are written and loaded.

use crate::args::parse_frame_shape;
use jinn_data::array_record::{ArrayRecordReader, WriterOptions};
use jinn_data::dataset::Dataset;
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::pickle::decode_episode;
use jinn_data::split_writer::SplitWriter;
use jinn_data::FrameShape;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `jinn bench data`.
#[derive(clap::Args)]
pub struct DataBenchArgs {
    /// Episodes of breakout to generate as the benchmark dataset.
    #[arg(long, default_value_t = 60)]
    pub episodes: usize,
    /// Frame size HxW.
    #[arg(long, default_value = "64x64", value_parser = parse_frame_shape)]
    pub size: FrameShape,
    /// Frames per sample.
    #[arg(long, default_value_t = 16)]
    pub seq_len: usize,
    /// Samples per batch.
    #[arg(long, default_value_t = 8)]
    pub batch_size: usize,
    /// Seconds to measure each loader setting.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

/// Run the data benchmark and print its table.
pub fn run(a: DataBenchArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cfg = GenerateConfig {
        episodes: a.episodes,
        frame_shape: a.size,
        val_fraction: 0.0,
        test_fraction: 0.0,
        ..Default::default()
    };
    println!("generating {} breakout episodes at {}x{} …", a.episodes, a.size.height, a.size.width);
    generate_dataset(&cfg, dir.path(), &mut |_| {})?;
    let train = dir.path().join("train");
    let dataset = Arc::new(Dataset::open(&train, a.seq_len, None)?);
    let frame_mb = a.size.frame_bytes() as f64 / 1e6;

    // Writing: the whole split again through SplitWriter vs. bare zstd of the same bytes.
    let episodes = read_all_records(&dataset)?;
    let total_frames: usize = episodes.iter().map(|e| e.sequence_length).sum();
    let out = tempfile::tempdir()?;
    let t = Instant::now();
    let mut w = SplitWriter::create(out.path(), "train", 100, WriterOptions::default())?;
    for e in &episodes {
        w.write_episode(&e.raw_video, a.size, e.actions.as_ref(), e.sequence_length, None)?;
    }
    w.finish()?;
    let write_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut compressed = 0usize;
    for e in &episodes {
        compressed += zstd::bulk::compress(&e.raw_video, 3)?.len();
    }
    let zstd_s = t.elapsed().as_secs_f64();
    let raw_mb = total_frames as f64 * frame_mb;
    println!(
        "\ndataset: {} records, {total_frames} frames ({raw_mb:.1} MB raw, {:.1} MB zstd)",
        episodes.len(),
        compressed as f64 / 1e6
    );
    println!("{:<34} {:>12} {:>10} {:>8}", "write", "frames/s", "MB/s", "ratio");
    println!(
        "{:<34} {:>12.0} {:>10.1} {:>8.2}",
        "bare zstd-3 compress (baseline)",
        total_frames as f64 / zstd_s,
        raw_mb / zstd_s,
        1.0
    );
    println!(
        "{:<34} {:>12.0} {:>10.1} {:>8.2}",
        "SplitWriter → ArrayRecord (zstd)",
        total_frames as f64 / write_s,
        raw_mb / write_s,
        zstd_s / write_s
    );

    // Loading: bare single-thread decode of random records, then the loader at 1 and 2 threads.
    let seconds = Duration::from_secs_f64(a.seconds);
    let bare = bare_decode_rate(&dataset, a.seq_len, seconds)?;
    println!(
        "\n{:<34} {:>12} {:>10} {:>8}",
        format!("load (T={}, B={})", a.seq_len, a.batch_size),
        "frames/s",
        "MB/s",
        "ratio"
    );
    println!(
        "{:<34} {:>12.0} {:>10.1} {:>8.2}",
        "bare read+decode, 1 thread (base)",
        bare,
        bare * frame_mb,
        1.0
    );
    let mut one = None;
    for threads in [1usize, 2] {
        let config = LoaderConfig {
            batch_size: a.batch_size,
            seq_len: a.seq_len,
            threads,
            prefetch: 4,
            ..Default::default()
        };
        let rate = loader_rate(dataset.clone(), config, seconds)?;
        println!(
            "{:<34} {:>12.0} {:>10.1} {:>8.2}",
            format!("Loader, {threads} thread(s)"),
            rate,
            rate * frame_mb,
            rate / bare
        );
        one.get_or_insert(rate);
        if threads == 2 {
            println!("\nscaling 2 threads / 1 thread: {:.2}×", rate / one.unwrap_or(rate));
        }
    }
    Ok(())
}

fn read_all_records(dataset: &Dataset) -> anyhow::Result<Vec<jinn_data::EpisodeRecord>> {
    let mut out = Vec::new();
    for (f, reader) in dataset.files().iter().enumerate() {
        for i in 0..reader.len() {
            out.push(dataset.read_record(f, i)?);
        }
    }
    Ok(out)
}

/// Frames/s of reading and decoding sampled records on the calling thread (window copy only).
fn bare_decode_rate(dataset: &Dataset, seq_len: usize, budget: Duration) -> anyhow::Result<f64> {
    let records = dataset.records();
    let files: &[ArrayRecordReader] = dataset.files();
    let (t, mut frames, mut i) = (Instant::now(), 0usize, 0usize);
    while t.elapsed() < budget {
        let r = records[(i * 7919) % records.len()];
        let e = decode_episode(&files[r.file as usize].read(r.record as u64)?)?;
        std::hint::black_box(&e.raw_video[..seq_len * dataset.frame_shape().frame_bytes()]);
        frames += seq_len;
        i += 1;
    }
    Ok(frames as f64 / t.elapsed().as_secs_f64())
}

/// Frames/s delivered by a loader, after one warm-up batch.
fn loader_rate(dataset: Arc<Dataset>, config: LoaderConfig, budget: Duration) -> anyhow::Result<f64> {
    let mut loader = Loader::new(dataset, config)?;
    loader.next().transpose()?;
    let (t, mut frames) = (Instant::now(), 0usize);
    while t.elapsed() < budget {
        let b = loader.next().transpose()?.expect("the loader is endless");
        frames += b.batch_size * b.seq_len;
    }
    Ok(frames as f64 / t.elapsed().as_secs_f64())
}
