//! Positional reads from a file or from memory, through `&self` (so one reader serves many
//! threads without locking).

use std::fs::File;
use std::io;

/// Where the bytes of an ArrayRecord file come from.
pub(crate) enum Source {
    /// An open file, read with `pread`.
    File(File),
    /// The whole file in memory.
    Memory(Vec<u8>),
}

impl Source {
    /// Fill `buf` from file offset `offset`; the caller has checked the range against the
    /// file size.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Source::File(file) => read_file_at(file, buf, offset),
            Source::Memory(bytes) => {
                let start = usize::try_from(offset).ok().filter(|&s| s <= bytes.len());
                match start.and_then(|s| bytes.get(s..s.checked_add(buf.len())?)) {
                    Some(src) => {
                        buf.copy_from_slice(src);
                        Ok(())
                    }
                    None => Err(io::ErrorKind::UnexpectedEof.into()),
                }
            }
        }
    }

    /// The bytes `[begin, end)` in a new buffer.
    pub fn read_range(&self, begin: u64, end: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(end - begin).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, begin)?;
        Ok(buf)
    }
}

#[cfg(unix)]
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_file_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
