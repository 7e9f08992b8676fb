//! The episode record: Jasmine's record dict as a Rust value.
//!
//! One record is a chunk of consecutive frames of one episode (160 by default), stored as
//! `pickle.dumps({"raw_video": bytes, "sequence_length": int, ["actions": np.ndarray],
//! ["video_file_name": str]})`.

use serde::{Deserialize, Serialize};

/// Height, width and channels of every frame in a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameShape {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels (3 for RGB).
    pub channels: usize,
}

impl FrameShape {
    /// An RGB frame shape.
    pub fn rgb(height: usize, width: usize) -> Self {
        FrameShape { height, width, channels: 3 }
    }

    /// Bytes of one frame (`H·W·C`).
    pub fn frame_bytes(&self) -> usize {
        self.height * self.width * self.channels
    }
}

/// NumPy dtype of a stored action array: every integer dtype NumPy writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionDtype {
    /// `int64` (MinAtar, jinn's environments).
    I64,
    /// `int32` (CoinRun: gym3 samples procgen's actions as int32).
    I32,
    /// `int16`.
    I16,
    /// `int8` (Atari).
    I8,
    /// `uint64`; values above `i64::MAX` are refused when read.
    U64,
    /// `uint32`.
    U32,
    /// `uint16`.
    U16,
    /// `uint8` (Jasmine's dummy test data).
    U8,
}

impl ActionDtype {
    /// Every dtype, widest signed first.
    pub const ALL: [ActionDtype; 8] = [
        ActionDtype::I64,
        ActionDtype::I32,
        ActionDtype::I16,
        ActionDtype::I8,
        ActionDtype::U64,
        ActionDtype::U32,
        ActionDtype::U16,
        ActionDtype::U8,
    ];

    /// NumPy's name for the dtype.
    pub fn numpy_name(&self) -> &'static str {
        match self {
            ActionDtype::I64 => "int64",
            ActionDtype::I32 => "int32",
            ActionDtype::I16 => "int16",
            ActionDtype::I8 => "int8",
            ActionDtype::U64 => "uint64",
            ActionDtype::U32 => "uint32",
            ActionDtype::U16 => "uint16",
            ActionDtype::U8 => "uint8",
        }
    }

    /// NumPy's type code without byte order (`dtype.str[1:]`), e.g. `i4`.
    pub fn descr(&self) -> &'static str {
        match self {
            ActionDtype::I64 => "i8",
            ActionDtype::I32 => "i4",
            ActionDtype::I16 => "i2",
            ActionDtype::I8 => "i1",
            ActionDtype::U64 => "u8",
            ActionDtype::U32 => "u4",
            ActionDtype::U16 => "u2",
            ActionDtype::U8 => "u1",
        }
    }

    /// The dtype with type code `descr` (`i1`…`i8`, `u1`…`u8`).
    pub fn from_descr(descr: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.descr() == descr)
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        match self {
            ActionDtype::I64 | ActionDtype::U64 => 8,
            ActionDtype::I32 | ActionDtype::U32 => 4,
            ActionDtype::I16 | ActionDtype::U16 => 2,
            ActionDtype::I8 | ActionDtype::U8 => 1,
        }
    }

    /// Whether the dtype is signed.
    pub fn signed(&self) -> bool {
        matches!(self, ActionDtype::I64 | ActionDtype::I32 | ActionDtype::I16 | ActionDtype::I8)
    }

    /// Smallest and largest value the dtype holds that also fits in `i64`.
    pub fn range(&self) -> (i64, i64) {
        let bits = 8 * self.size() as u32;
        match self.signed() {
            true => (-(1i128 << (bits - 1)) as i64, ((1i128 << (bits - 1)) - 1) as i64),
            false => (0, ((1i128 << bits) - 1).min(i64::MAX.into()) as i64),
        }
    }

    /// Decode one element of this dtype from `bytes` (`size()` long), little- or big-endian.
    pub fn decode(&self, bytes: &[u8], big_endian: bool) -> i128 {
        let mut buf = [0u8; 8];
        let n = self.size();
        if big_endian {
            buf[..n].iter_mut().zip(bytes.iter().rev()).for_each(|(d, s)| *d = *s);
        } else {
            buf[..n].copy_from_slice(&bytes[..n]);
        }
        let raw = u64::from_le_bytes(buf);
        let bits = 8 * n as u32;
        match self.signed() && bits < 64 {
            // Sign-extend from `bits`.
            true => i128::from(((raw << (64 - bits)) as i64) >> (64 - bits)),
            false if self.signed() => i128::from(raw as i64),
            false => i128::from(raw),
        }
    }
}

/// An action array: shape `[T]` or `[T, k]`, values widened to `i64`, dtype remembered so a
/// written record carries the dtype it was read with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionArray {
    /// Stored dtype.
    pub dtype: ActionDtype,
    /// `[T]` or `[T, k]`.
    pub shape: Vec<usize>,
    /// C-order values.
    pub values: Vec<i64>,
}

impl ActionArray {
    /// A `[T]` int64 action array.
    pub fn from_i64(values: Vec<i64>) -> Self {
        ActionArray { dtype: ActionDtype::I64, shape: vec![values.len()], values }
    }

    /// Number of time steps (first axis).
    pub fn steps(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }

    /// Values per time step (`k`; 1 for shape `[T]`).
    pub fn per_step(&self) -> usize {
        self.shape.iter().skip(1).product()
    }
}

/// One record of an episode dataset (Jasmine's schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeRecord {
    /// C-order `u8` frames `[sequence_length, H, W, C]` (the shape lives in metadata.json).
    pub raw_video: Vec<u8>,
    /// Number of frames in this record.
    pub sequence_length: usize,
    /// Actions, the one at index t taken after observing frame t.
    pub actions: Option<ActionArray>,
    /// Source video path (video imports only).
    pub video_file_name: Option<String>,
}
