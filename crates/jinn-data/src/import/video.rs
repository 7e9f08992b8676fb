//! Video files → episodes, decoded by an `ffmpeg` subprocess.
//!
//! Each video is one episode. ffmpeg resamples it to `fps` (its `fps` filter drops or repeats
//! frames to hit the rate) and scales it to exactly `width × height` with area averaging,
//! ignoring the aspect ratio: pick a size with the source's aspect (e.g. 160×90 for 16:9) to
//! avoid stretching. Frames arrive as raw RGB on ffmpeg's stdout. One decoded video is held in
//! memory at a time (`T·H·W·3` bytes: 36,000 frames of 64×64 is 442 MB).

use super::splits::seeded_shuffle;
use super::{has_extension, list_dir, DatasetSink, ImportSummary, OutputConfig};
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// File extensions picked up when an input is a directory.
pub const VIDEO_EXTENSIONS: &[&str] =
    &["mp4", "webm", "mkv", "avi", "mov", "m4v", "mpg", "mpeg", "flv", "nut"];

/// Settings of a video import (`jinn data import-video`).
#[derive(Debug, Clone)]
pub struct VideoImportConfig {
    /// Video files (any format ffmpeg reads) or directories, whose files with a
    /// [`VIDEO_EXTENSIONS`] extension are taken (not recursing).
    pub inputs: Vec<PathBuf>,
    /// Output frame rate (`--fps`, default 10).
    pub fps: f64,
    /// Output frame height (`--height`, default 64).
    pub height: usize,
    /// Output frame width (`--width`, default 64).
    pub width: usize,
    /// The ffmpeg program (`--ffmpeg`, default `ffmpeg`, looked up on `PATH`).
    pub ffmpeg_bin: PathBuf,
    /// Output settings.
    pub output: OutputConfig,
}

impl VideoImportConfig {
    /// Defaults for importing `inputs` into `out_dir`.
    pub fn new(inputs: Vec<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        VideoImportConfig {
            inputs,
            fps: 10.0,
            height: 64,
            width: 64,
            ffmpeg_bin: PathBuf::from("ffmpeg"),
            output: OutputConfig::new(out_dir),
        }
    }

    /// The RGB frame shape of the output.
    pub fn shape(&self) -> FrameShape {
        FrameShape::rgb(self.height, self.width)
    }
}

/// Import every input video as one episode (see the module docs).
pub fn import_video(cfg: &VideoImportConfig) -> Result<ImportSummary> {
    check_fps_and_size(cfg.fps, cfg.height, cfg.width)?;
    let mut videos = discover_videos(&cfg.inputs)?;
    seeded_shuffle(&mut videos, cfg.output.seed);
    let mut sink = DatasetSink::create(&cfg.output, cfg.shape())?;
    for video in &videos {
        let frames = read_video_frames(&cfg.ffmpeg_bin, video, cfg.fps, cfg.shape())?; // [T, H, W, 3]
        if !sink.skip_if_short(video, frames.len() / cfg.shape().frame_bytes()) {
            sink.add(&frames, Some(&video.to_string_lossy()))?;
        }
    }
    let mut extra = serde_json::Map::new();
    extra.insert("fps".into(), cfg.fps.into());
    extra.insert("num_input_videos".into(), videos.len().into());
    sink.finish("video-import", extra)
}

/// The input videos, sorted and deduplicated: files as given, directories expanded to their
/// files with a video extension. An error names any input that is missing or yields nothing.
pub fn discover_videos(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if inputs.is_empty() {
        return Err(DataError::invalid("video inputs", "none given; expected video files or directories"));
    }
    let mut out = Vec::new();
    for input in inputs {
        if input.is_file() {
            out.push(input.clone());
        } else if input.is_dir() {
            let found: Vec<PathBuf> = list_dir(input)?
                .into_iter()
                .filter(|p| p.is_file() && has_extension(p, VIDEO_EXTENSIONS))
                .collect();
            if found.is_empty() {
                return Err(DataError::invalid(
                    "video input",
                    format!(
                        "{} holds no video files (extensions {})",
                        input.display(),
                        VIDEO_EXTENSIONS.join(", ")
                    ),
                ));
            }
            out.extend(found);
        } else {
            return Err(DataError::invalid(
                "video input",
                format!(
                    "{} does not exist (expected a video file or a directory of videos)",
                    input.display()
                ),
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Decode `path` with ffmpeg at `fps`, scaled to `shape` (which must be RGB). Returns
/// `[T, H, W, 3]` u8.
pub fn read_video_frames(ffmpeg_bin: &Path, path: &Path, fps: f64, shape: FrameShape) -> Result<Vec<u8>> {
    check_fps_and_size(fps, shape.height, shape.width)?;
    if shape.channels != 3 {
        return Err(DataError::invalid(
            "video frame shape",
            format!("{shape:?}; ffmpeg import produces RGB (3 channels)"),
        ));
    }
    let filter = format!("fps={fps},scale={}:{}:flags=area", shape.width, shape.height);
    let mut child = Command::new(ffmpeg_bin)
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-i"])
        .arg(path)
        .args(["-vf", &filter, "-an", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(ffmpeg_bin, e))?;
    // Drain stderr on a thread so a chatty ffmpeg cannot block on a full pipe.
    let mut stderr = child.stderr.take().expect("stderr piped");
    let stderr_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let mut frames = Vec::new(); // [T, H, W, 3]
    let read = child.stdout.take().expect("stdout piped").read_to_end(&mut frames);
    let status = child.wait().map_err(|e| DataError::io(ffmpeg_bin, e))?;
    let stderr = stderr_thread.join().unwrap_or_default();
    read.map_err(|e| DataError::io(path, e))?;
    if !status.success() {
        return Err(DataError::Tool {
            tool: "ffmpeg".into(),
            reason: format!("failed on {} ({status}): {}", path.display(), stderr_tail(&stderr)),
        });
    }
    if !frames.len().is_multiple_of(shape.frame_bytes()) {
        return Err(DataError::Tool {
            tool: "ffmpeg".into(),
            reason: format!(
                "output for {} is {} bytes, not a whole number of {} x {} RGB frames",
                path.display(),
                frames.len(),
                shape.width,
                shape.height
            ),
        });
    }
    Ok(frames)
}

fn check_fps_and_size(fps: f64, height: usize, width: usize) -> Result<()> {
    if !(fps.is_finite() && fps > 0.0) {
        return Err(DataError::invalid("--fps", format!("{fps}; expected a positive number")));
    }
    if height == 0 || width == 0 {
        return Err(DataError::invalid(
            "--height/--width",
            format!("{height}x{width}; both must be at least 1"),
        ));
    }
    Ok(())
}

/// A failure to start ffmpeg, with how to fix it.
fn spawn_error(bin: &Path, e: std::io::Error) -> DataError {
    let reason = if e.kind() == std::io::ErrorKind::NotFound {
        if bin.components().count() > 1 {
            format!(
                "not found at {} (from --ffmpeg); install ffmpeg (e.g. `apt-get install ffmpeg`) or point --ffmpeg at it",
                bin.display()
            )
        } else {
            format!(
                "`{}` was not found on PATH; install ffmpeg (e.g. `apt-get install ffmpeg`) or pass --ffmpeg /path/to/ffmpeg",
                bin.display()
            )
        }
    } else {
        format!("could not start {}: {e}", bin.display())
    };
    DataError::Tool { tool: "ffmpeg".into(), reason }
}

/// The last lines of ffmpeg's stderr (at most 2,000 characters).
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return "(no error output)".into();
    }
    let start = text.char_indices().rev().nth(1999).map_or(0, |(i, _)| i);
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ffmpeg_available() -> bool {
        let ok = Command::new("ffmpeg")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !ok {
            eprintln!("ffmpeg not on PATH: skipping this test");
        }
        ok
    }

    /// A 1-second, 20 fps, 32×24 solid-colour video, stored losslessly (raw RGB in NUT).
    fn make_video(path: &Path, colour: &str) {
        let status = Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i"])
            .arg(format!("color=c={colour}:size=32x24:rate=20:duration=1"))
            .args(["-c:v", "rawvideo", "-pix_fmt", "rgb24", "-y"])
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn missing_ffmpeg_says_how_to_install() {
        let e = read_video_frames(
            Path::new("/nonexistent/bin/ffmpeg"),
            Path::new("x.mp4"),
            10.0,
            FrameShape::rgb(8, 8),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("ffmpeg: not found at /nonexistent/bin/ffmpeg"), "{e}");
        assert!(e.contains("apt-get install ffmpeg"), "{e}");
        let e = read_video_frames(
            Path::new("ffmpeg-bogus-name-xyz"),
            Path::new("x.mp4"),
            10.0,
            FrameShape::rgb(8, 8),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("was not found on PATH") && e.contains("--ffmpeg"), "{e}");
    }

    #[test]
    fn decodes_resamples_and_scales() {
        if !ffmpeg_available() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let video = dir.path().join("red.nut");
        make_video(&video, "0xC81E5A");
        let shape = FrameShape::rgb(6, 10);
        let frames = read_video_frames(Path::new("ffmpeg"), &video, 10.0, shape).unwrap();
        assert_eq!(frames.len() / shape.frame_bytes(), 10, "1 s at 10 fps");
        for px in frames.chunks_exact(3) {
            let err = (0..3).map(|k| (px[k] as i32 - [0xC8, 0x1E, 0x5A][k]).abs()).max().unwrap();
            assert!(err <= 2, "{px:?}");
        }
    }

    #[test]
    fn ffmpeg_failure_names_the_file_and_quotes_stderr() {
        if !ffmpeg_available() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("not_a_video.mp4");
        std::fs::write(&bad, b"hello, I am text").unwrap();
        let e = read_video_frames(Path::new("ffmpeg"), &bad, 10.0, FrameShape::rgb(8, 8))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("ffmpeg: failed on ") && e.contains("not_a_video.mp4"), "{e}");
        assert!(e.contains("Invalid data"), "stderr quoted: {e}");
    }

    #[test]
    fn discovery_expands_directories_and_reports_missing_inputs() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.mp4", "a.WEBM", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let extra = dir.path().join("notes.txt");
        let got =
            discover_videos(&[dir.path().to_path_buf(), extra.clone(), dir.path().join("b.mp4")]).unwrap();
        assert_eq!(got, vec![dir.path().join("a.WEBM"), dir.path().join("b.mp4"), extra]);
        let e = discover_videos(&[dir.path().join("missing.mp4")]).unwrap_err().to_string();
        assert!(e.contains("missing.mp4 does not exist"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        assert!(discover_videos(&[empty.path().to_path_buf()])
            .unwrap_err()
            .to_string()
            .contains("no video files"));
        assert!(discover_videos(&[]).is_err());
    }

    #[test]
    fn imports_videos_end_to_end() {
        if !ffmpeg_available() {
            return;
        }
        use crate::array_record::ArrayRecordReader;
        use crate::pickle::decode_episode;
        let dir = tempfile::tempdir().unwrap();
        let videos = dir.path().join("videos");
        std::fs::create_dir(&videos).unwrap();
        for (i, colour) in ["red", "blue", "green", "white"].iter().enumerate() {
            make_video(&videos.join(format!("v{i}.nut")), colour);
        }
        let mut cfg = VideoImportConfig::new(vec![videos.clone()], dir.path().join("out"));
        cfg.height = 8;
        cfg.width = 8;
        cfg.output.chunk_len = 4;
        cfg.output.min_frames = Some(5);
        let summary = import_video(&cfg).unwrap();
        assert!(summary.skipped.is_empty());
        let m = &summary.metadata;
        assert_eq!(
            (m.env.as_str(), m.num_actions, m.height, m.width),
            ("video-import", None, Some(8), Some(8))
        );
        let total: usize = m.splits.values().map(|s| s.num_frames).sum();
        assert_eq!(total, 40);
        let reader = ArrayRecordReader::open(&dir.path().join("out/train/data_0000.array_record")).unwrap();
        let rec = decode_episode(&reader.read(0).unwrap()).unwrap();
        assert_eq!(rec.sequence_length, 4);
        assert!(rec.actions.is_none());
        assert!(rec.video_file_name.unwrap().ends_with(".nut"));
        // A second run into the same directory is refused without --overwrite.
        assert!(import_video(&cfg).unwrap_err().to_string().contains("--overwrite"));
    }
}
