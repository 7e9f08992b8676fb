//! Whole characters from a stream of token bytes: a byte-level model can split a multi-byte
//! character across tokens, so text is released only once each character is complete.

/// Buffers token bytes and hands out the complete UTF-8 text so far.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Append `bytes` and return the text that is now complete (possibly empty). Bytes that can
    /// never be UTF-8 come out as U+FFFD; an incomplete character at the end waits.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(), // an incomplete character: wait
            Err(_) => self.pending.len(),                         // invalid bytes: release lossily
        };
        let text = String::from_utf8_lossy(&self.pending[..complete]).into_owned();
        self.pending.drain(..complete);
        text
    }

    /// Whatever is left (an unfinished character, as U+FFFD).
    pub fn finish(self) -> String {
        String::from_utf8_lossy(&self.pending).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    #[test]
    fn characters_split_across_pushes_come_out_whole() {
        let text = "aé€😀b";
        let mut stream = Utf8Stream::default();
        let mut out = Vec::new();
        for b in text.as_bytes() {
            out.push(stream.push(&[*b]));
        }
        assert_eq!(out.concat(), text);
        // 'é' is 2 bytes: nothing comes out after its first byte.
        assert_eq!((out[1].as_str(), out[2].as_str()), ("", "é"));
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn invalid_and_unfinished_bytes_become_replacement_characters() {
        let mut stream = Utf8Stream::default();
        assert_eq!(stream.push(&[b'x', 0xff, b'y']), "x\u{fffd}y");
        assert_eq!(stream.push(&[0xe2, 0x82]), "");
        assert_eq!(stream.finish(), "\u{fffd}");
    }
}
