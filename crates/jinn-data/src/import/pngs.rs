//! Folders of numbered PNG frames → episodes.
//!
//! Each episode is a folder of `.png` files ordered by the number in their names (the last run
//! of digits in the file stem, so `frame_2.png` comes before `frame_10.png`). A PNG without a
//! number, or two PNGs with the same number, is an error naming the files: silently skipping
//! or misordering frames would corrupt the episode. Other files (`.txt`, `.json`) are ignored.
//!
//! Frames are subsampled from `source_fps` to `target_fps` by keeping
//! `floor(n · target / source)` frames at indices `floor(k · source / target)`, converted to
//! RGB (alpha dropped, grey replicated, 16-bit reduced to 8) and, when their size differs from
//! the requested one, resized with a triangle (bilinear) filter, which averages properly when
//! shrinking and, unlike Lanczos, does not ring around the hard edges of game graphics.

use super::splits::seeded_shuffle;
use super::{has_extension, list_dir, DatasetSink, ImportSummary, OutputConfig};
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use image::imageops::FilterType;
use std::path::{Path, PathBuf};

/// Settings of a PNG import (`jinn data import-pngs`).
#[derive(Debug, Clone)]
pub struct PngImportConfig {
    /// Folders: one holding `.png` files directly is one episode; otherwise each of its
    /// immediate subfolders holding `.png` files is one episode.
    pub inputs: Vec<PathBuf>,
    /// Frame rate of the recorded frames (`--source-fps`, default 10).
    pub source_fps: f64,
    /// Frame rate to keep (`--target-fps`, default 10; at most `source_fps`).
    pub target_fps: f64,
    /// Output `(height, width)` (`--height/--width`); `None` keeps the size of the first frame
    /// read, and every other frame must then have that size.
    pub size: Option<(usize, usize)>,
    /// Output settings.
    pub output: OutputConfig,
}

impl PngImportConfig {
    /// Defaults for importing `inputs` into `out_dir`.
    pub fn new(inputs: Vec<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        PngImportConfig {
            inputs,
            source_fps: 10.0,
            target_fps: 10.0,
            size: None,
            output: OutputConfig::new(out_dir),
        }
    }
}

/// Import every episode folder (see the module docs).
pub fn import_pngs(cfg: &PngImportConfig) -> Result<ImportSummary> {
    subsample_indices(0, cfg.source_fps, cfg.target_fps)?;
    if let Some((h, w)) = cfg.size {
        if h == 0 || w == 0 {
            return Err(DataError::invalid("--height/--width", format!("{h}x{w}; both must be at least 1")));
        }
    }
    let mut episodes = discover_png_episodes(&cfg.inputs)?;
    // Without a requested size, the first frame of the first episode (in sorted order) sets it.
    let (height, width) = match cfg.size {
        Some(size) => size,
        None => {
            let first = numbered_pngs(&episodes[0])?;
            let shape = load_frame(&first[0], None)?.1;
            (shape.height, shape.width)
        }
    };
    let shape = FrameShape::rgb(height, width);
    seeded_shuffle(&mut episodes, cfg.output.seed);
    let mut sink = DatasetSink::create(&cfg.output, shape)?;
    for episode in &episodes {
        let files = numbered_pngs(episode)?;
        let keep = subsample_indices(files.len(), cfg.source_fps, cfg.target_fps)?;
        if sink.skip_if_short(episode, keep.len()) {
            continue;
        }
        let mut frames = Vec::with_capacity(keep.len() * shape.frame_bytes()); // [T, H, W, 3]
        for &i in &keep {
            let (pixels, got) = load_frame(&files[i], cfg.size)?;
            if got != shape {
                return Err(DataError::invalid(
                    "PNG frame size",
                    format!(
                        "{} is {}x{} but earlier frames are {height}x{width}; pass --height/--width to resize all frames",
                        files[i].display(),
                        got.height,
                        got.width
                    ),
                ));
            }
            frames.extend_from_slice(&pixels);
        }
        sink.add(&frames, None)?;
    }
    let mut extra = serde_json::Map::new();
    extra.insert("source_fps".into(), cfg.source_fps.into());
    extra.insert("fps".into(), cfg.target_fps.into());
    extra.insert("num_input_episodes".into(), episodes.len().into());
    sink.finish("png-import", extra)
}

/// Episode folders under `inputs` (see [`PngImportConfig::inputs`]), sorted and deduplicated.
pub fn discover_png_episodes(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if inputs.is_empty() {
        return Err(DataError::invalid("PNG inputs", "none given; expected folders of numbered PNG frames"));
    }
    let mut out = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            return Err(DataError::invalid(
                "PNG input",
                format!("{} is not a directory (expected a folder of numbered PNG frames)", input.display()),
            ));
        }
        if holds_pngs(input)? {
            out.push(input.clone());
            continue;
        }
        let mut found = false;
        for sub in list_dir(input)?.into_iter().filter(|p| p.is_dir()) {
            if holds_pngs(&sub)? {
                out.push(sub);
                found = true;
            }
        }
        if !found {
            return Err(DataError::invalid(
                "PNG input",
                format!("{} holds no .png files, directly or in its subfolders", input.display()),
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn holds_pngs(dir: &Path) -> Result<bool> {
    Ok(list_dir(dir)?.iter().any(|p| p.is_file() && has_extension(p, &["png"])))
}

/// The `.png` files of `dir` ordered by their frame number (see the module docs).
pub fn numbered_pngs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut numbered = Vec::new();
    for path in list_dir(dir)?.into_iter().filter(|p| p.is_file() && has_extension(p, &["png"])) {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let n = frame_number(&stem).ok_or_else(|| {
            DataError::invalid(
                "PNG frame name",
                format!(
                    "{} has no frame number (expected names like frame_000123.png, ordered by the \
                     last number in the name); move other images out of the folder",
                    path.display()
                ),
            )
        })?;
        numbered.push((n, path));
    }
    numbered.sort();
    if let Some(w) = numbered.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(DataError::invalid(
            "PNG frame name",
            format!("{} and {} have the same frame number {}", w[0].1.display(), w[1].1.display(), w[0].0),
        ));
    }
    Ok(numbered.into_iter().map(|(_, p)| p).collect())
}

/// The last run of ASCII digits in `stem` as a number (`None` if there is none or it does
/// not fit in 64 bits).
pub fn frame_number(stem: &str) -> Option<u64> {
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = stem[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    stem[start..end].parse().ok()
}

/// Indices of the frames kept when `n` frames at `source_fps` are resampled to `target_fps`:
/// `floor(k · source / target)` for `k < floor(n · target / source)`. Upsampling (target above
/// source) is refused.
pub fn subsample_indices(n: usize, source_fps: f64, target_fps: f64) -> Result<Vec<usize>> {
    for (flag, v) in [("--source-fps", source_fps), ("--target-fps", target_fps)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(DataError::invalid(flag, format!("{v}; expected a positive number")));
        }
    }
    if target_fps > source_fps {
        return Err(DataError::invalid(
            "--target-fps",
            format!(
                "{target_fps} is above --source-fps {source_fps}; frames are only dropped, never repeated"
            ),
        ));
    }
    if target_fps == source_fps {
        return Ok((0..n).collect());
    }
    // A tiny epsilon keeps exact ratios (e.g. 30 → 10) from losing a frame to rounding.
    let count = (n as f64 * target_fps / source_fps + 1e-9).floor() as usize;
    let step = source_fps / target_fps;
    Ok((0..count).map(|k| ((k as f64 * step + 1e-9).floor() as usize).min(n - 1)).collect())
}

/// Read one PNG as RGB `[H, W, 3]`, resized to `size = (height, width)` when given and
/// different. Returns the pixels and their shape.
pub fn load_frame(path: &Path, size: Option<(usize, usize)>) -> Result<(Vec<u8>, FrameShape)> {
    let img = image::ImageReader::open(path)
        .map_err(|e| DataError::io(path, e))?
        .decode()
        .map_err(|e| DataError::format(path, 0, format!("not a readable PNG image: {e}")))?
        .to_rgb8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    let img = match size {
        Some((th, tw)) if (th, tw) != (h, w) => {
            image::imageops::resize(&img, tw as u32, th as u32, FilterType::Triangle)
        }
        _ => img,
    };
    let shape = FrameShape::rgb(img.height() as usize, img.width() as usize);
    Ok((img.into_raw(), shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save_png(path: &Path, w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) {
        image::RgbImage::from_fn(w, h, |x, y| image::Rgb(f(x, y))).save(path).unwrap();
    }

    #[test]
    fn frame_numbers_sort_numerically() {
        assert_eq!(frame_number("frame_0012"), Some(12));
        assert_eq!(frame_number("ep3_frame10"), Some(10));
        assert_eq!(frame_number("7"), Some(7));
        assert_eq!(frame_number("cover"), None);
        assert_eq!(frame_number("99999999999999999999999"), None);
        let dir = tempfile::tempdir().unwrap();
        for name in ["f10.png", "f2.png", "f1.PNG", "info.txt"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let got = numbered_pngs(dir.path()).unwrap();
        let names: Vec<_> = got.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["f1.PNG", "f2.png", "f10.png"]);
        std::fs::write(dir.path().join("cover.png"), b"").unwrap();
        let e = numbered_pngs(dir.path()).unwrap_err().to_string();
        assert!(e.contains("cover.png has no frame number"), "{e}");
        std::fs::remove_file(dir.path().join("cover.png")).unwrap();
        std::fs::write(dir.path().join("f002.png"), b"").unwrap();
        let e = numbered_pngs(dir.path()).unwrap_err().to_string();
        assert!(e.contains("same frame number 2"), "{e}");
    }

    #[test]
    fn subsampling_matches_the_formula() {
        assert_eq!(subsample_indices(7, 20.0, 10.0).unwrap(), [0, 2, 4]);
        assert_eq!(subsample_indices(10, 30.0, 10.0).unwrap(), [0, 3, 6]);
        assert_eq!(subsample_indices(4, 5.0, 5.0).unwrap(), [0, 1, 2, 3]);
        assert_eq!(subsample_indices(0, 30.0, 7.0).unwrap(), Vec::<usize>::new());
        // Non-integer ratio: 25 → 10 fps keeps floor(k · 2.5).
        assert_eq!(subsample_indices(11, 25.0, 10.0).unwrap(), [0, 2, 5, 7]);
        // Reference check against exact rational arithmetic for many n and integer rates.
        for n in 0..200usize {
            for (s, t) in [(60usize, 7usize), (30, 29), (24, 10), (50, 1)] {
                let want: Vec<usize> = (0..n * t / s).map(|k| k * s / t).collect();
                assert_eq!(subsample_indices(n, s as f64, t as f64).unwrap(), want, "n={n} {s}->{t}");
            }
        }
        assert!(subsample_indices(5, 10.0, 20.0).unwrap_err().to_string().contains("--target-fps"));
        assert!(subsample_indices(5, 0.0, 0.0).unwrap_err().to_string().contains("--source-fps"));
    }

    #[test]
    fn frames_are_converted_and_resized() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.png");
        // Grey + alpha input becomes RGB with the grey replicated.
        image::GrayAlphaImage::from_fn(4, 2, |x, _| image::LumaA([x as u8 * 60, 10])).save(&path).unwrap();
        let (px, shape) = load_frame(&path, None).unwrap();
        assert_eq!(shape, FrameShape::rgb(2, 4));
        assert_eq!(&px[..6], &[0, 0, 0, 60, 60, 60]);
        // A 2×2 checker of solid 8×8 blocks shrunk to 2×2: the triangle filter blends in some of
        // the neighbouring blocks, but each output pixel stays closest to its own block's colour.
        let colours: [[u8; 3]; 4] = [[200, 0, 0], [0, 200, 0], [0, 0, 200], [90, 90, 90]];
        save_png(&path, 16, 16, |x, y| colours[(y / 8 * 2 + x / 8) as usize]);
        let (px, shape) = load_frame(&path, Some((2, 2))).unwrap();
        assert_eq!(shape, FrameShape::rgb(2, 2));
        let dist = |a: &[u8], b: &[u8; 3]| (0..3).map(|k| (a[k] as i32 - b[k] as i32).pow(2)).sum::<i32>();
        for (i, p) in px.chunks_exact(3).enumerate() {
            let nearest = (0..4).min_by_key(|&c| dist(p, &colours[c])).unwrap();
            assert_eq!(nearest, i, "output pixel {i} = {p:?}");
        }
        // A solid image upscaled to a non-square size stays solid.
        save_png(&path, 3, 5, |_, _| [10, 20, 30]);
        let (px, shape) = load_frame(&path, Some((7, 9))).unwrap();
        assert_eq!(shape, FrameShape::rgb(7, 9));
        assert!(px.chunks_exact(3).all(|p| p == [10, 20, 30]));
        std::fs::write(&path, b"not a png").unwrap();
        let e = load_frame(&path, None).unwrap_err().to_string();
        assert!(e.contains("0.png") && e.contains("not a readable PNG"), "{e}");
    }

    #[test]
    fn episodes_are_found_directly_or_one_level_down() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for ep in ["b", "a", "empty"] {
            std::fs::create_dir(root.join(ep)).unwrap();
        }
        std::fs::write(root.join("a/1.png"), b"").unwrap();
        std::fs::write(root.join("b/1.png"), b"").unwrap();
        std::fs::write(root.join("empty/readme.txt"), b"").unwrap();
        assert_eq!(discover_png_episodes(&[root.to_path_buf()]).unwrap(), [root.join("a"), root.join("b")]);
        assert_eq!(
            discover_png_episodes(&[root.join("b"), root.join("a")]).unwrap(),
            [root.join("a"), root.join("b")]
        );
        let e = discover_png_episodes(&[root.join("empty")]).unwrap_err().to_string();
        assert!(e.contains("holds no .png files"), "{e}");
        assert!(discover_png_episodes(&[root.join("a/1.png")])
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
    }

    #[test]
    fn imports_png_folders_end_to_end() {
        use crate::array_record::ArrayRecordReader;
        use crate::pickle::decode_episode;
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("episodes");
        // Five episodes of 2·(10 + 3e) frames at 20 fps; frame i of episode e has colour (e, i, 0).
        for e in 0..5u8 {
            let ep = input.join(format!("ep{e}"));
            std::fs::create_dir_all(&ep).unwrap();
            for i in 0..2 * (10 + 3 * e as u32) {
                save_png(&ep.join(format!("frame_{i}.png")), 12, 10, |_, _| [e, i as u8, 0]);
            }
        }
        let mut cfg = PngImportConfig::new(vec![input], dir.path().join("out"));
        cfg.source_fps = 20.0;
        cfg.target_fps = 10.0;
        cfg.size = Some((5, 6));
        cfg.output.chunk_len = 8;
        cfg.output.min_frames = Some(11);
        cfg.output.splits = crate::import::SplitFractions { train: 0.6, val: 0.2, test: 0.2 };
        let summary = import_pngs(&cfg).unwrap();
        assert_eq!(summary.skipped.len(), 1, "ep0 has 10 frames after subsampling");
        let m = &summary.metadata;
        assert_eq!(
            (m.env.as_str(), m.height, m.width, m.channels),
            ("png-import", Some(5), Some(6), Some(3))
        );
        let frames: usize = m.splits.values().map(|s| s.num_frames).sum();
        assert_eq!(frames, 13 + 16 + 19 + 22);
        // Every record holds frames 0, 2, 4, ... of one episode, in order.
        for (split, stats) in &m.splits {
            for f in &stats.files {
                let reader = ArrayRecordReader::open(&dir.path().join("out").join(&f.path)).unwrap();
                for r in 0..reader.len() {
                    let rec = decode_episode(&reader.read(r).unwrap()).unwrap();
                    let greens: Vec<u8> = rec.raw_video.chunks_exact(90).map(|fr| fr[1]).collect();
                    assert!(greens.windows(2).all(|w| w[1] == w[0] + 2), "{split}: {greens:?}");
                }
            }
        }
        // Same seed, same assignment; --overwrite required for the second run.
        assert!(import_pngs(&cfg).is_err());
        cfg.output.overwrite = true;
        let again = import_pngs(&cfg).unwrap();
        assert_eq!(again.metadata.splits, summary.metadata.splits);
    }
}
