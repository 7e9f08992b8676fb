//! A small, safe pickle codec for exactly Jasmine's record dict.
//!
//! A record is CPython's `pickle.dumps({"raw_video": bytes, "sequence_length": int,
//! ["actions": np.ndarray], ["video_file_name": str]})`, `sequence_length` a Python int or a
//! NumPy integer scalar, `actions` of any integer dtype. The reader ([`decode_episode`],
//! [`decode_episode_borrowed`]) accepts protocols 2–5 as CPython 3.11 with NumPy 1.x or 2.x
//! writes them; other keys with plain values are ignored. It never imports or calls
//! anything: the only globals it accepts are NumPy's array/dtype/scalar reconstructors
//! and `_codecs.encode`, applied symbolically; any other global or opcode is a
//! [`DataError::Pickle`] naming it.
//!
//! The writer ([`encode_episode`]) produces protocol 4 exactly as CPython 3.11's `pickle.dumps`
//! does, framing included; see [`NumpyModule`] for the one spelling choice.

mod numpy;
mod opcodes;
mod reader;
mod value;
mod writer;

pub use writer::{encode_episode, encode_episode_with, try_encode_episode, NumpyModule};

use crate::episode::{ActionArray, EpisodeRecord};
use crate::error::{DataError, Result};
use std::borrow::Cow;
use std::rc::Rc;
use value::{Bytes, Value};

/// A decoded record whose video (and file name) may borrow from the pickle bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeRecordRef<'a> {
    /// `[sequence_length, H, W, C]` u8 frames; borrowed except for protocol 2 pickles.
    pub raw_video: Cow<'a, [u8]>,
    /// Number of frames.
    pub sequence_length: usize,
    /// Actions, if the record has them.
    pub actions: Option<ActionArray>,
    /// Source video path, if the record has one.
    pub video_file_name: Option<Cow<'a, str>>,
}

impl EpisodeRecordRef<'_> {
    /// Copy what is borrowed into an owned [`EpisodeRecord`].
    pub fn into_owned(self) -> EpisodeRecord {
        EpisodeRecord {
            raw_video: self.raw_video.into_owned(),
            sequence_length: self.sequence_length,
            actions: self.actions,
            video_file_name: self.video_file_name.map(Cow::into_owned),
        }
    }
}

/// Decode `pickle.dumps(record_dict)` bytes (protocol 2–5), copying the video once.
pub fn decode_episode(bytes: &[u8]) -> Result<EpisodeRecord> {
    decode_episode_borrowed(bytes).map(EpisodeRecordRef::into_owned)
}

/// Decode `pickle.dumps(record_dict)` bytes without copying the video: `raw_video` and
/// `video_file_name` borrow from `bytes` (protocol 3–5).
pub fn decode_episode_borrowed(bytes: &[u8]) -> Result<EpisodeRecordRef<'_>> {
    let loaded = reader::load(bytes)?;
    let at = loaded.stop_offset;
    let Value::Dict(dict) = loaded.value else {
        return Err(DataError::Pickle {
            offset: at,
            reason: format!("expected the record dict, found {}", loaded.value.type_name()),
        });
    };
    // The VM is gone, so the dict is the only owner of its items.
    let items = Rc::try_unwrap(dict).map(|c| c.into_inner()).unwrap_or_else(|rc| rc.borrow().clone());

    let mut raw_video = None;
    let mut sequence_length = None;
    let mut actions = None;
    let mut video_file_name = None;
    // Later duplicates win, as in a Python dict.
    for (key, value, offset) in items {
        let field_err = |field: &str, reason: String| DataError::Pickle {
            offset,
            reason: format!("field `{field}`: {reason}"),
        };
        let Value::Str(key) = key else {
            return Err(DataError::Pickle {
                offset,
                reason: format!("record dict key must be a str, found {}", key.type_name()),
            });
        };
        match key {
            "raw_video" => match value {
                Value::Bytes(b) => raw_video = Some(b),
                other => return Err(field_err(key, format!("expected bytes, found {}", other.type_name()))),
            },
            "sequence_length" => match value {
                Value::Int(n) => {
                    let n = usize::try_from(n)
                        .map_err(|_| field_err(key, format!("expected a count, found {n}")))?;
                    sequence_length = Some(n);
                }
                Value::BigInt => return Err(field_err(key, "int too large".into())),
                other => return Err(field_err(key, format!("expected int, found {}", other.type_name()))),
            },
            "actions" => match value {
                Value::None => actions = None,
                Value::Array(a) => {
                    let a = a.borrow();
                    let Some(data) = a.as_ref() else {
                        return Err(field_err(
                            key,
                            "ndarray was never given its state (missing BUILD)".into(),
                        ));
                    };
                    actions = Some(numpy::to_actions(data).map_err(|r| field_err(key, r))?);
                }
                other => {
                    return Err(field_err(
                        key,
                        format!("expected a numpy.ndarray, found {}", other.type_name()),
                    ))
                }
            },
            "video_file_name" => match value {
                Value::None => video_file_name = None,
                Value::Str(s) => video_file_name = Some(s),
                other => return Err(field_err(key, format!("expected str, found {}", other.type_name()))),
            },
            _ => {}
        }
    }
    let missing =
        |field: &str| DataError::Pickle { offset: at, reason: format!("record dict has no `{field}`") };
    let raw_video = raw_video.ok_or_else(|| missing("raw_video"))?;
    let sequence_length = sequence_length.ok_or_else(|| missing("sequence_length"))?;
    let raw_video = match raw_video {
        Bytes::Borrowed(b) => Cow::Borrowed(b),
        // Protocol 2 built these bytes; take them without a copy when nothing else holds them.
        Bytes::Shared(rc) => Cow::Owned(Rc::try_unwrap(rc).unwrap_or_else(|rc| rc.as_ref().clone())),
    };
    Ok(EpisodeRecordRef {
        raw_video,
        sequence_length,
        actions,
        video_file_name: video_file_name.map(Cow::Borrowed),
    })
}

#[cfg(test)]
mod tests;
