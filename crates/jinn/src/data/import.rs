//! `jinn data import-video` and `jinn data import-pngs`.

use crate::args::{parse_frame_shape, writer_options, Codec};
use jinn_data::import::{import_pngs, import_video, ImportSummary, PngImportConfig, VideoImportConfig};
use jinn_data::import::{OutputConfig, SplitFractions};
use jinn_data::FrameShape;
use std::path::PathBuf;

/// Output flags shared by both importers.
#[derive(clap::Args)]
pub struct OutputArgs {
    /// Output dataset directory (gets train/, val/, test/, metadata.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Frames per record.
    #[arg(long, default_value_t = 160)]
    pub chunk_len: usize,
    /// Records per ArrayRecord file.
    #[arg(long, default_value_t = 100)]
    pub chunks_per_file: usize,
    /// Skip episodes with fewer frames (default: --chunk-len).
    #[arg(long)]
    pub min_frames: Option<usize>,
    /// Seed of the split assignment.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of frames for val/.
    #[arg(long, default_value_t = 0.1)]
    pub val_fraction: f64,
    /// Share of frames for test/.
    #[arg(long, default_value_t = 0.1)]
    pub test_fraction: f64,
    /// Chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub codec: Codec,
    /// Replace a dataset already in --out.
    #[arg(long)]
    pub overwrite: bool,
}

impl OutputArgs {
    fn config(&self) -> OutputConfig {
        OutputConfig {
            out_dir: self.out.clone(),
            chunk_len: self.chunk_len,
            chunks_per_file: self.chunks_per_file,
            min_frames: self.min_frames,
            seed: self.seed,
            splits: SplitFractions {
                train: 1.0 - self.val_fraction - self.test_fraction,
                val: self.val_fraction,
                test: self.test_fraction,
            },
            overwrite: self.overwrite,
            writer: writer_options(self.codec, 1),
        }
    }
}

/// Arguments of `jinn data import-video`.
#[derive(clap::Args)]
pub struct ImportVideoArgs {
    /// Video files or directories of videos.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Frames per second to sample.
    #[arg(long, default_value_t = 10.0)]
    pub fps: f64,
    /// Frame size HxW (aspect is not preserved: choose e.g. 90x160 for 16:9).
    #[arg(long, default_value = "64x64", value_parser = parse_frame_shape)]
    pub size: FrameShape,
    /// ffmpeg program to run.
    #[arg(long, default_value = "ffmpeg")]
    pub ffmpeg: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `jinn data import-pngs`.
#[derive(clap::Args)]
pub struct ImportPngsArgs {
    /// Folders of numbered PNG frames (one per episode, or a folder of such folders).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Frame rate the PNGs were captured at.
    #[arg(long, default_value_t = 10.0)]
    pub source_fps: f64,
    /// Frame rate to keep (evenly spaced subsampling).
    #[arg(long, default_value_t = 10.0)]
    pub target_fps: f64,
    /// Resize frames to HxW (default: keep the first frame's size).
    #[arg(long, value_parser = parse_frame_shape)]
    pub size: Option<FrameShape>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Import videos.
pub fn run_video(a: ImportVideoArgs) -> anyhow::Result<()> {
    let mut cfg = VideoImportConfig::new(a.inputs, &a.output.out);
    cfg.fps = a.fps;
    cfg.height = a.size.height;
    cfg.width = a.size.width;
    cfg.ffmpeg_bin = a.ffmpeg;
    cfg.output = a.output.config();
    report(&import_video(&cfg)?, &a.output.out);
    Ok(())
}

/// Import PNG folders.
pub fn run_pngs(a: ImportPngsArgs) -> anyhow::Result<()> {
    let mut cfg = PngImportConfig::new(a.inputs, &a.output.out);
    cfg.source_fps = a.source_fps;
    cfg.target_fps = a.target_fps;
    cfg.size = a.size.map(|s| (s.height, s.width));
    cfg.output = a.output.config();
    report(&import_pngs(&cfg)?, &a.output.out);
    Ok(())
}

fn report(summary: &ImportSummary, out: &std::path::Path) {
    for s in &summary.skipped {
        println!("skipped {} ({} frames): {}", s.path.display(), s.frames, s.reason);
    }
    for (name, s) in &summary.metadata.splits {
        println!("{name}: {} episodes, {} frames, {} records", s.num_episodes, s.num_frames, s.num_chunks);
    }
    println!("wrote {}", out.display());
}
