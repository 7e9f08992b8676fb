//! Crash-safe file writes: write to a temporary file in the same directory, fsync, rename
//! over the target, fsync the directory. A crash at any point leaves either the old file or
//! the complete new one, never a torn file.

use crate::error::{DataError, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it appears at its final path only after [`AtomicFile::commit`].
/// Dropping it without committing removes the temporary file.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Start writing `target` (its parent directory must exist).
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| {
                DataError::invalid("output path", format!("{} has no file name", target.display()))
            })?
            .to_string_lossy()
            .into_owned();
        let temp = target.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let file = File::create(&temp).map_err(|e| DataError::io(&temp, e))?;
        Ok(AtomicFile { target, temp, writer: Some(BufWriter::with_capacity(1 << 20, file)) })
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flush, fsync, rename into place and fsync the directory.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let file = writer.into_inner().map_err(|e| DataError::io(&self.temp, e.into_error()))?;
        file.sync_all().map_err(|e| DataError::io(&self.temp, e))?;
        drop(file);
        std::fs::rename(&self.temp, &self.target).map_err(|e| DataError::io(&self.target, e))?;
        sync_parent_dir(&self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.as_mut().expect("writer present until commit").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.as_mut().expect("writer present until commit").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Write `bytes` to `path` atomically.
pub fn write_atomically(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path.as_ref())?;
    file.write_all(bytes).map_err(|e| DataError::io(path.as_ref(), e))?;
    file.commit()
}

/// fsync the directory holding `path`, so a rename into it survives a crash.
fn sync_parent_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Directories can be opened read-only and fsynced on Unix; elsewhere this is a no-op.
    #[cfg(unix)]
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| DataError::io(dir, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write_atomically(&path, b"old").unwrap();
        {
            let mut f = AtomicFile::create(&path).unwrap();
            f.write_all(b"half-written").unwrap();
            // dropped without commit: simulates a crash before rename
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file removed");
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}
