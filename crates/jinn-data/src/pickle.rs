//! Pickle codec for Jasmine's record dict. (API stand-in; the implementation lands with the
//! pickle work.)

use crate::episode::EpisodeRecord;
use crate::error::Result;

/// Decode `pickle.dumps(record_dict)` bytes.
pub fn decode_episode(_bytes: &[u8]) -> Result<EpisodeRecord> {
    todo!("pickle reader")
}

/// Encode a record exactly as CPython 3.11's `pickle.dumps(dict)` (protocol 4) would.
pub fn encode_episode(_record: &EpisodeRecord) -> Vec<u8> {
    todo!("pickle writer")
}
