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

/// NumPy dtype of a stored action array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionDtype {
    /// `int64` (CoinRun, MinAtar, jinn's environments).
    I64,
    /// `int8` (Atari).
    I8,
    /// `uint8` (Jasmine's dummy test data).
    U8,
}

impl ActionDtype {
    /// NumPy's name for the dtype.
    pub fn numpy_name(&self) -> &'static str {
        match self {
            ActionDtype::I64 => "int64",
            ActionDtype::I8 => "int8",
            ActionDtype::U8 => "uint8",
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
