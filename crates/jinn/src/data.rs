//! `jinn data …`: generate, import, inspect and verify episode datasets.

mod gen;
mod import;
mod inspect;
mod verify;

use crate::args::parse_frame_shape;
use clap::Subcommand;
use jinn_data::dataset::has_record_files;
use jinn_data::FrameShape;
use std::path::{Path, PathBuf};

/// Dataset subcommands.
#[derive(Subcommand)]
pub enum DataCommand {
    /// Play a built-in game with a random sticky-action policy and write train/val/test.
    Gen(gen::GenArgs),
    /// Import videos (via ffmpeg) as episodes without actions.
    ImportVideo(import::ImportVideoArgs),
    /// Import folders of numbered PNG frames as episodes without actions.
    ImportPngs(import::ImportPngsArgs),
    /// Print counts, shapes and an action histogram, and write a GIF of the first frames.
    Inspect(inspect::InspectArgs),
    /// Decode every record; name each bad one by file and index. Exits non-zero on any.
    Verify(verify::VerifyArgs),
}

/// Run a dataset subcommand.
pub fn run(cmd: DataCommand) -> anyhow::Result<()> {
    match cmd {
        DataCommand::Gen(a) => gen::run(a),
        DataCommand::ImportVideo(a) => import::run_video(a),
        DataCommand::ImportPngs(a) => import::run_pngs(a),
        DataCommand::Inspect(a) => inspect::run(a),
        DataCommand::Verify(a) => verify::run(a),
    }
}

/// Frame-shape override flag shared by readers.
#[derive(clap::Args, Clone)]
pub struct ShapeArg {
    /// Frame shape HxW[xC]; read from metadata.json when omitted (Jasmine's datasets lack it:
    /// CoinRun 64x64x3, Atari 84x84x3, MinAtar 10x10x3, video converter 90x160x3).
    #[arg(long, value_parser = parse_frame_shape)]
    pub frame_shape: Option<FrameShape>,
}

/// The splits under `path`: its `train`/`val`/`test` (or any) subdirectories holding
/// `*.array_record` files, or `path` itself when it holds them directly (or is a file). Empty
/// or absent splits (Jasmine's generators leave both) are skipped.
pub fn splits_of(path: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    if !path.exists() {
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    let name =
        |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| ".".into());
    if has_record_files(path) {
        return Ok(vec![(name(path), path.to_path_buf())]);
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && has_record_files(p))
        .collect();
    // Conventional order first, then any other split by name.
    let rank = |p: &PathBuf| match name(p).as_str() {
        "train" => 0,
        "val" => 1,
        "test" => 2,
        _ => 3,
    };
    subdirs.sort_by_key(|p| (rank(p), p.clone()));
    if subdirs.is_empty() {
        anyhow::bail!("{}: no *.array_record files here or in its subdirectories", path.display());
    }
    Ok(subdirs.into_iter().map(|p| (name(&p), p)).collect())
}

/// Frame shape from the flag, else from `metadata.json` beside `split_dir`.
pub fn resolve_shape(split_dir: &Path, flag: Option<FrameShape>) -> anyhow::Result<FrameShape> {
    if let Some(s) = flag {
        return Ok(s);
    }
    let dir = if split_dir.is_file() { split_dir.parent().unwrap_or(Path::new(".")) } else { split_dir };
    let meta = jinn_data::metadata::DatasetMetadata::find(dir)
        .map(|p| jinn_data::metadata::DatasetMetadata::load(&p))
        .transpose()?;
    meta.and_then(|m| m.frame_shape()).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: no metadata.json with height/width/channels here or in the parent (Jasmine's generators \
             write none); pass --frame-shape HxWxC, e.g. 64x64x3 for CoinRun",
            dir.display()
        )
    })
}
