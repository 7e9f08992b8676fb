//! A dataset split on disk: the sorted `*.array_record` files of a directory, an index of
//! every record's length, and decoding of frame windows with full validation.
//!
//! Record lengths come from `metadata.json` (jinn writes them per file) or, for datasets
//! written elsewhere (Jasmine's), from one parallel scan whose result is cached in
//! `.jinn_index.json` (keyed by file name and size, so a changed file is rescanned): next to the
//! files when that directory is writable, else in [`index_cache_dir`] under a name derived
//! from the directory's path.

use crate::array_record::ArrayRecordReader;
use crate::atomic_file::write_atomically;
use crate::episode::{ActionArray, EpisodeRecord, FrameShape};
use crate::error::{DataError, Result};
use crate::metadata::{DatasetMetadata, METADATA_FILE};
use crate::pickle::{decode_episode, decode_episode_borrowed};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// File name of the record-length cache written for datasets without per-file lengths.
pub const INDEX_CACHE_FILE: &str = ".jinn_index.json";

/// Where record-length caches of read-only dataset directories go: `$JINN_CACHE_DIR/index`,
/// else `$XDG_CACHE_HOME/jinn/index`, else `$HOME/.cache/jinn/index`; `None` when none is set.
pub fn index_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = var("JINN_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("jinn")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/jinn")))?;
    Some(base.join("index"))
}

/// The record-length cache files for the split directory `root`: next to its files, then in
/// [`index_cache_dir`] (named after a hash of the absolute path, so splits never collide).
pub fn index_cache_paths(root: &Path) -> Vec<PathBuf> {
    use highway::{HighwayHash, HighwayHasher, Key};
    let mut paths = vec![root.join(INDEX_CACHE_FILE)];
    if let Some(dir) = index_cache_dir() {
        let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let hash = HighwayHasher::new(Key([0; 4])).hash64(absolute.as_os_str().as_encoded_bytes());
        let name = file_name(&absolute);
        paths.push(dir.join(format!("{name}-{hash:016x}.json")));
    }
    paths
}

/// A record long enough to sample from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef {
    /// Index into [`Dataset::files`].
    pub file: u32,
    /// Record index within that file.
    pub record: u32,
    /// Frames in the record.
    pub len: u32,
}

/// A window of frames cut from one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// `[T, H, W, C]` u8.
    pub frames: Vec<u8>,
    /// `[T, k]` actions (row-major), when the record has them.
    pub actions: Option<Vec<i64>>,
    /// Values per action step (`k`).
    pub action_dims: usize,
}

/// An opened dataset split.
pub struct Dataset {
    root: PathBuf,
    files: Vec<ArrayRecordReader>,
    shape: FrameShape,
    records: Vec<RecordRef>,
    total_records: usize,
    metadata: Option<DatasetMetadata>,
}

impl Dataset {
    /// Open `path` (a directory of `*.array_record` files or one such file) and index every
    /// record of at least `min_len` frames. `shape` overrides the frame shape recorded in
    /// `metadata.json` (needed for datasets whose metadata lacks it, such as Jasmine's).
    pub fn open(path: &Path, min_len: usize, shape: Option<FrameShape>) -> Result<Self> {
        Self::open_resolving(path, min_len, |recorded, _| Ok(shape.or(recorded)))
    }

    /// [`Dataset::open`] for a command with a model config whose frames are `want`: a shape in
    /// `metadata.json` must equal it (an error naming both otherwise); without one (Jasmine's
    /// datasets) `want` is the shape, checked against every record's `raw_video` size.
    pub fn open_for_model(path: &Path, min_len: usize, want: FrameShape) -> Result<Self> {
        Self::open_resolving(path, min_len, |recorded, root| {
            match recorded {
            Some(got) if got != want => Err(DataError::invalid(
                "frame shape",
                format!(
                    "the model config expects {}×{}×{} frames but {} records {}×{}×{} in its {METADATA_FILE}; \
                     set model.height, model.width and model.channels to match the data",
                    want.height,
                    want.width,
                    want.channels,
                    root.display(),
                    got.height,
                    got.width,
                    got.channels
                ),
            )),
            _ => Ok(Some(want)),
        }
        })
    }

    /// Open with the frame shape `resolve` picks from the one `metadata.json` records (if any).
    fn open_resolving(
        path: &Path,
        min_len: usize,
        resolve: impl FnOnce(Option<FrameShape>, &Path) -> Result<Option<FrameShape>>,
    ) -> Result<Self> {
        let (root, paths) = list_record_files(path)?;
        let metadata_path = DatasetMetadata::find(&root);
        let metadata = match &metadata_path {
            Some(p) => Some(DatasetMetadata::load(p)?),
            None => None,
        };
        let recorded = metadata.as_ref().and_then(|m| m.frame_shape());
        let shape = resolve(recorded, &root)?.ok_or_else(|| {
            let which = match &metadata_path {
                Some(p) => {
                    format!("{} records no frame shape (Jasmine's generators write none)", p.display())
                }
                None => format!("{} has no {METADATA_FILE} here or in its parent", root.display()),
            };
            DataError::invalid(
                "frame shape",
                format!(
                    "{which}; the frame shape comes from the model config (model.height, model.width, \
                     model.channels) or, on data commands, from --frame-shape HxWxC (e.g. 64x64x3)"
                ),
            )
        })?;
        if shape.frame_bytes() == 0 {
            return Err(DataError::invalid("frame shape", format!("{shape:?} has a zero dimension")));
        }
        let files = paths.iter().map(|p| ArrayRecordReader::open(p)).collect::<Result<Vec<_>>>()?;
        let listed = metadata.as_ref().zip(metadata_path.as_deref().and_then(Path::parent));
        let lens = record_lengths(&root, &files, listed, shape)?;
        let total_records = lens.iter().map(Vec::len).sum();
        let records = lens
            .iter()
            .enumerate()
            .flat_map(|(f, lens)| {
                lens.iter().enumerate().map(move |(r, &len)| RecordRef {
                    file: f as u32,
                    record: r as u32,
                    len: len as u32,
                })
            })
            .filter(|r| r.len as usize >= min_len.max(1))
            .collect();
        let dataset = Dataset { root, files, shape, records, total_records, metadata };
        // Lengths from metadata or the cache decoded nothing: a wrong frame shape fails here, not
        // in the middle of a run.
        if let Some(f) = dataset.files.iter().position(|r| !r.is_empty()) {
            dataset.read_record(f, 0)?;
        }
        Ok(dataset)
    }

    /// Directory holding the files.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Frame shape.
    pub fn frame_shape(&self) -> FrameShape {
        self.shape
    }

    /// The readers, in sorted file order.
    pub fn files(&self) -> &[ArrayRecordReader] {
        &self.files
    }

    /// Records long enough to sample from, in (file, record) order.
    pub fn records(&self) -> &[RecordRef] {
        &self.records
    }

    /// All records, including the ones too short to sample from.
    pub fn total_records(&self) -> usize {
        self.total_records
    }

    /// Records dropped because they are shorter than the requested length.
    pub fn skipped_short(&self) -> usize {
        self.total_records - self.records.len()
    }

    /// `metadata.json`, when present.
    pub fn metadata(&self) -> Option<&DatasetMetadata> {
        self.metadata.as_ref()
    }

    /// Decode one whole record and check it against the frame shape.
    pub fn read_record(&self, file: usize, record: u64) -> Result<EpisodeRecord> {
        let reader = &self.files[file];
        let bytes = reader.read(record)?;
        let fail =
            |reason: String| DataError::Record { path: reader.path().to_path_buf(), index: record, reason };
        let episode = decode_episode(&bytes).map_err(|e| fail(e.to_string()))?;
        validate_record(&episode, self.shape).map_err(fail)?;
        Ok(episode)
    }

    /// Frames `start..start+len` of a record (and the same window of its actions).
    pub fn read_window(&self, r: RecordRef, start: usize, len: usize) -> Result<Window> {
        let mut scratch = Vec::new();
        self.read_window_with(r, start, len, &mut scratch)
    }

    /// [`Dataset::read_window`] decoding through a caller-owned scratch buffer, so a loader
    /// thread reuses one allocation for every record it reads.
    pub fn read_window_with(
        &self,
        r: RecordRef,
        start: usize,
        len: usize,
        scratch: &mut Vec<u8>,
    ) -> Result<Window> {
        let reader = &self.files[r.file as usize];
        let index = r.record as u64;
        reader.read_into(index, scratch)?;
        let fail = |reason: String| DataError::Record { path: reader.path().to_path_buf(), index, reason };
        let episode = decode_episode_borrowed(scratch).map_err(|e| fail(e.to_string()))?;
        let shape = self.shape;
        check_record(&episode.raw_video, episode.sequence_length, episode.actions.as_ref(), shape)
            .map_err(fail)?;
        if start + len > episode.sequence_length {
            return Err(fail(format!(
                "window {start}..{} lies outside the record's {} frames (the length index is stale: \
                 delete {INDEX_CACHE_FILE} or regenerate metadata.json)",
                start + len,
                episode.sequence_length
            )));
        }
        let fb = shape.frame_bytes();
        let frames = episode.raw_video[start * fb..(start + len) * fb].to_vec();
        let (actions, action_dims) = match &episode.actions {
            Some(a) => {
                let k = a.per_step();
                (Some(a.values[start * k..(start + len) * k].to_vec()), k)
            }
            None => (None, 0),
        };
        Ok(Window { frames, actions, action_dims })
    }
}

/// Check a decoded record's sizes against the frame shape; returns what was wrong.
pub fn validate_record(e: &EpisodeRecord, shape: FrameShape) -> std::result::Result<(), String> {
    check_record(&e.raw_video, e.sequence_length, e.actions.as_ref(), shape)
}

/// The size checks of [`validate_record`] on a record's parts (owned or borrowed).
fn check_record(
    video: &[u8],
    sequence_length: usize,
    actions: Option<&ActionArray>,
    shape: FrameShape,
) -> std::result::Result<(), String> {
    let (video_bytes, fb) = (video.len(), shape.frame_bytes());
    let needed = sequence_length.saturating_mul(fb);
    if video_bytes != needed {
        let (h, w, c) = (shape.height, shape.width, shape.channels);
        let fit = match video_bytes.is_multiple_of(fb) {
            true => format!("{} frames of it", video_bytes / fb),
            false => format!("it does not divide into {h}×{w}×{c} = {fb}-byte frames"),
        };
        return Err(format!(
            "raw_video has {video_bytes} bytes but sequence_length {sequence_length} × frame {h}×{w}×{c} \
             needs {needed} ({fit}; is the frame shape right?)"
        ));
    }
    if let Some(a) = actions {
        if a.steps() != sequence_length || a.values.len() != a.steps() * a.per_step() {
            return Err(format!(
                "actions have shape {:?} ({} values); expected {sequence_length} steps",
                a.shape,
                a.values.len()
            ));
        }
    }
    Ok(())
}

/// Whether `path` is a `*.array_record` file or a directory holding one: an existing but
/// empty split (as Jasmine's generators leave one) is `false`.
pub fn has_record_files(path: &Path) -> bool {
    let is_record = |p: &Path| p.extension().is_some_and(|x| x == "array_record") && p.is_file();
    is_record(path)
        || std::fs::read_dir(path)
            .map(|rd| rd.filter_map(|e| e.ok()).any(|e| is_record(&e.path())))
            .unwrap_or(false)
}

/// The sorted `*.array_record` files of `path` (or `path` itself if it is a file), and the
/// directory they live in.
pub fn list_record_files(path: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    if path.is_file() {
        let root = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        return Ok((root, vec![path.to_path_buf()]));
    }
    let entries = std::fs::read_dir(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => DataError::invalid(
            "dataset path",
            format!("{} does not exist (a missing split? datasets hold train/, val/, test/)", path.display()),
        ),
        _ => DataError::io(path, e),
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let p = entry.map_err(|e| DataError::io(path, e))?.path();
        if p.extension().is_some_and(|x| x == "array_record") && p.is_file() {
            files.push(p);
        }
    }
    // Jasmine lists files unsorted (file-system order); sorting makes record numbering stable.
    files.sort();
    if files.is_empty() {
        let hint = match path.file_name().and_then(|n| n.to_str()) {
            Some("train" | "val" | "test") => {
                "the split is empty (Jasmine's generators leave an empty split folder when it got \
                 fewer chunks than chunks_per_file)"
            }
            _ => "point at a split such as data/breakout/train",
        };
        return Err(DataError::invalid(
            "dataset path",
            format!("{} contains no *.array_record files ({hint})", path.display()),
        ));
    }
    Ok((path.to_path_buf(), files))
}

#[derive(Serialize, Deserialize, Default)]
struct IndexCache {
    files: Vec<CachedFile>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedFile {
    name: String,
    size: u64,
    seq_lens: Vec<usize>,
}

/// Frames of every record of every file: from metadata (with the directory it lies in), the
/// cache, or a parallel scan.
fn record_lengths(
    root: &Path,
    files: &[ArrayRecordReader],
    metadata: Option<(&DatasetMetadata, &Path)>,
    shape: FrameShape,
) -> Result<Vec<Vec<usize>>> {
    let cache_paths = index_cache_paths(root);
    let mut cache = IndexCache::default();
    for p in &cache_paths {
        let read: Option<IndexCache> = std::fs::read(p).ok().and_then(|b| serde_json::from_slice(&b).ok());
        cache.files.extend(read.into_iter().flat_map(|c| c.files));
    }
    let mut lens = Vec::with_capacity(files.len());
    let mut missing = Vec::new();
    let mut entries = Vec::with_capacity(files.len());
    for (i, reader) in files.iter().enumerate() {
        let name = file_name(reader.path());
        let size = std::fs::metadata(reader.path()).map_err(|e| DataError::io(reader.path(), e))?.len();
        let known = metadata
            .and_then(|(m, dir)| lens_from_metadata(m, dir, reader.path(), reader.len()))
            .or_else(|| {
                cache.files.iter().find(|c| c.name == name && c.size == size).map(|c| c.seq_lens.clone())
            })
            .filter(|l| l.len() as u64 == reader.len());
        if known.is_none() {
            missing.push(i);
        }
        lens.push(known.unwrap_or_default());
        entries.push((name, size));
    }
    if missing.is_empty() {
        return Ok(lens);
    }
    tracing::info!("indexing {} file(s) in {} (decoding every record once)", missing.len(), root.display());
    let scanned = scan_lengths(files, &missing, shape)?;
    for (i, l) in missing.iter().zip(scanned) {
        lens[*i] = l;
    }
    let cache = IndexCache {
        files: entries
            .into_iter()
            .zip(&lens)
            .map(|((name, size), l)| CachedFile { name, size, seq_lens: l.clone() })
            .collect(),
    };
    write_index_cache(&cache_paths, &serde_json::to_vec(&cache).expect("cache serialises"));
    Ok(lens)
}

/// Write the cache to the first of `paths` that takes it (a read-only dataset directory falls
/// through to the user cache directory); without any, the next open rescans.
fn write_index_cache(paths: &[PathBuf], bytes: &[u8]) {
    let mut failures = Vec::new();
    for p in paths {
        let dir_ready = p.parent().map_or(Ok(()), std::fs::create_dir_all);
        match dir_ready.map_err(|e| DataError::io(p, e)).and_then(|()| write_atomically(p, bytes)) {
            Ok(()) => return,
            Err(e) => failures.push(e.to_string()),
        }
    }
    tracing::warn!("could not write the record-length index cache ({})", failures.join("; "));
}

/// The record lengths `metadata` (found in `dir`) lists for the file at `path`, matched by its
/// path relative to `dir` (`val/data_0000.array_record`: every split has a `data_0000`) and
/// its record count.
fn lens_from_metadata(metadata: &DatasetMetadata, dir: &Path, path: &Path, count: u64) -> Option<Vec<usize>> {
    let relative = path.strip_prefix(dir).ok()?;
    let relative: Vec<String> =
        relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    metadata
        .splits
        .values()
        .flat_map(|s| &s.files)
        .find(|f| {
            f.path.split('/').eq(relative.iter().map(String::as_str)) && f.seq_lens.len() as u64 == count
        })
        .map(|f| f.seq_lens.clone())
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Decode every record of the listed files on all cores; lengths per file.
fn scan_lengths(files: &[ArrayRecordReader], which: &[usize], shape: FrameShape) -> Result<Vec<Vec<usize>>> {
    let jobs: Vec<(usize, u64)> =
        which.iter().enumerate().flat_map(|(slot, &f)| (0..files[f].len()).map(move |r| (slot, r))).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    let results: Vec<Result<Vec<(usize, u64, usize)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let jobs = &jobs;
                s.spawn(move || {
                    jobs.iter()
                        .skip(t)
                        .step_by(threads)
                        .map(|&(slot, r)| {
                            let reader = &files[which[slot]];
                            let bytes = reader.read(r)?;
                            let fail = |reason: String| DataError::Record {
                                path: reader.path().to_path_buf(),
                                index: r,
                                reason,
                            };
                            let e = decode_episode(&bytes).map_err(|e| fail(e.to_string()))?;
                            validate_record(&e, shape).map_err(fail)?;
                            Ok((slot, r, e.sequence_length))
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("index scan thread panicked")).collect()
    });
    let mut out: Vec<Vec<usize>> = which.iter().map(|&f| vec![0; files[f].len() as usize]).collect();
    for part in results {
        for (slot, r, len) in part? {
            out[slot][r as usize] = len;
        }
    }
    Ok(out)
}
