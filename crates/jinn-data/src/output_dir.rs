//! The output directory of a dataset writer (`jinn data gen`, the importers): created when
//! missing, refused when it already holds something unless the user asked to overwrite, and
//! then cleared of the previous dataset only (never of anything else the user keeps there).

use crate::error::{DataError, Result};
use crate::metadata::METADATA_FILE;
use std::path::Path;

/// Make `dir` ready for a new dataset: create it if missing; if it holds anything, refuse
/// unless `overwrite`, in which case [`clear_dataset`] it.
pub fn prepare_output_dir(dir: &Path, overwrite: bool) -> Result<()> {
    if !dir.exists() {
        return std::fs::create_dir_all(dir).map_err(|e| DataError::io(dir, e));
    }
    if !dir.is_dir() {
        return Err(DataError::invalid("--out", format!("{} exists and is not a directory", dir.display())));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    if entries.next().is_none() {
        return Ok(());
    }
    if !overwrite {
        return Err(DataError::invalid(
            "--out",
            format!(
                "{} is not empty; choose an empty or new directory, or pass --overwrite to replace the \
                 dataset in it",
                dir.display()
            ),
        ));
    }
    clear_dataset(dir)
}

/// Remove a dataset from `dir`: `metadata.json` first (so an interrupted run never leaves
/// old metadata describing new files), then the `data_*.array_record` files (and leftover
/// temporary files of them) in `train/`, `val/`, `test/`, then those directories if empty.
/// Nothing else is touched.
pub fn clear_dataset(dir: &Path) -> Result<()> {
    let meta = dir.join(METADATA_FILE);
    if meta.is_file() {
        std::fs::remove_file(&meta).map_err(|e| DataError::io(&meta, e))?;
    }
    for split in ["train", "val", "test"] {
        let split_dir = dir.join(split);
        if !split_dir.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&split_dir).map_err(|e| DataError::io(&split_dir, e))? {
            let path = entry.map_err(|e| DataError::io(&split_dir, e))?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let ours = name.trim_start_matches('.').starts_with("data_") && name.contains(".array_record");
            if ours && path.is_file() {
                std::fs::remove_file(&path).map_err(|e| DataError::io(&path, e))?;
            }
        }
        // Fails (and is left alone) when the user kept other files there.
        let _ = std::fs::remove_dir(&split_dir);
    }
    Ok(())
}
