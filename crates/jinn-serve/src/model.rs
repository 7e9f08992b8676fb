//! The world-model interface the server drives: frames in, an action, the next frame out.
//!
//! A model owns its per-session state opaquely ([`WorldState`]: token history, KV cache, RNG,
//! …); the server only stores it, clones it before each step (for undo) and hands it back.
//! Implementations need not be thread-safe internally beyond `Send + Sync`: the server calls
//! [`WorldModel::start`] and [`WorldModel::step`] for one model from one thread at a time.

use jinn_data::FrameShape;
use serde::Serialize;
use std::any::Any;

/// One frame: `[H, W, C]` u8 pixels, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Height, width, channels.
    pub shape: FrameShape,
    /// `[H, W, C]` u8.
    pub pixels: Vec<u8>,
}

impl Frame {
    /// A frame, checking that `pixels` holds exactly `H·W·C` bytes.
    pub fn new(shape: FrameShape, pixels: Vec<u8>) -> Result<Self, ModelError> {
        if pixels.len() != shape.frame_bytes() {
            return Err(ModelError::BadInput(format!(
                "frame has {} bytes; expected {} ([H, W, C] = [{}, {}, {}])",
                pixels.len(),
                shape.frame_bytes(),
                shape.height,
                shape.width,
                shape.channels
            )));
        }
        Ok(Frame { shape, pixels })
    }
}

/// One action of a model, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionInfo {
    /// The action's index, `0..actions.len()`.
    pub id: u32,
    /// Button text ("left", "fire", or "3" for a latent action code).
    pub label: String,
    /// Suggested key, a `KeyboardEvent.key` value ("ArrowLeft", " "); the page assigns digits
    /// and letters to actions without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A short description of what the action does (e.g. a LAM code's typical effect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A dataset split a session can start from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SplitInfo {
    /// Split name ("train", "val", "test").
    pub name: String,
    /// Number of episodes (records) in it.
    pub episodes: usize,
}

/// What a model is and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelInfo {
    /// Model name (the run directory's name, or "fake").
    pub name: String,
    /// Frame shape of every input and output frame.
    pub frame: FrameShape,
    /// Actions, indexed by `id`.
    pub actions: Vec<ActionInfo>,
    /// Most start frames [`WorldModel::start`] accepts (its context length); at least 1.
    pub max_start_frames: usize,
    /// Dataset splits [`StartSource::Dataset`] can draw from (empty: none).
    pub splits: Vec<SplitInfo>,
}

/// Where a session's start frames come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartSource {
    /// Any frame of the model's own data (the model picks; successive calls may differ).
    Sample,
    /// Frames `frame..` of episode `episode` in a dataset split.
    Dataset {
        /// Split name, one of [`ModelInfo::splits`].
        split: String,
        /// Episode (record) index in the split.
        episode: usize,
        /// First frame within the episode.
        frame: usize,
    },
}

/// Errors of a model call. `BadInput` and `NotFound` are the caller's fault (HTTP 4xx),
/// `Failed` the model's (HTTP 500).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The request is invalid for this model (wrong frame size, unknown action, …).
    #[error("{0}")]
    BadInput(String),
    /// Something asked for does not exist (an unknown split, an episode out of range).
    #[error("{0}")]
    NotFound(String),
    /// The model failed (I/O, inference).
    #[error("model failed: {0}")]
    Failed(String),
}

/// A session's state, owned by the model and opaque to the server: any `Clone + Send + Sync`
/// value. Cloned once per step to keep undo history, so keep it cheap to clone (share large
/// immutable parts through `Arc`).
pub struct WorldState(Box<dyn ErasedState>);

/// Object-safe clone + downcast for [`WorldState`]'s contents.
trait ErasedState: Send + Sync {
    fn clone_box(&self) -> Box<dyn ErasedState>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync> ErasedState for T {
    fn clone_box(&self) -> Box<dyn ErasedState> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl WorldState {
    /// Wrap a model's state value.
    pub fn new<T: Any + Clone + Send + Sync>(state: T) -> Self {
        WorldState(Box::new(state))
    }

    /// The state as `T`, or `None` when it holds another type.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// The state as `&mut T`, or `None` when it holds another type.
    pub fn downcast_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }

    /// The state as `&mut T`, or [`ModelError::Failed`] naming the expected type — for models
    /// handed a state they did not create.
    pub fn expect_mut<T: Any>(&mut self) -> Result<&mut T, ModelError> {
        self.downcast_mut().ok_or_else(|| {
            ModelError::Failed(format!("session state is not a {}", std::any::type_name::<T>()))
        })
    }
}

impl Clone for WorldState {
    fn clone(&self) -> Self {
        WorldState(self.0.clone_box())
    }
}

impl std::fmt::Debug for WorldState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorldState(..)")
    }
}

/// A playable world model. The server validates actions against [`ModelInfo::actions`] and
/// frame shapes against [`ModelInfo::frame`] before calling it, and serialises calls per model.
pub trait WorldModel: Send + Sync {
    /// Name, frame shape, actions, start options.
    fn info(&self) -> &ModelInfo;

    /// Start frames from the model's data (`[H, W, C]` each, 1..=`max_start_frames`).
    fn start_frames(&self, source: &StartSource) -> Result<Vec<Frame>, ModelError>;

    /// A new session conditioned on `frames` (1..=`max_start_frames`, oldest first; the last
    /// is the current frame).
    fn start(&self, frames: &[Frame]) -> Result<WorldState, ModelError>;

    /// Apply `action` (< number of actions) and return the next frame.
    fn step(&self, state: &mut WorldState, action: u32) -> Result<Frame, ModelError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_state_clones_deeply_and_downcasts_only_to_its_type() {
        let mut a = WorldState::new(vec![1u8, 2, 3]);
        let b = a.clone();
        a.downcast_mut::<Vec<u8>>().unwrap().push(4);
        assert_eq!(a.downcast_ref::<Vec<u8>>().unwrap(), &[1, 2, 3, 4]);
        assert_eq!(b.downcast_ref::<Vec<u8>>().unwrap(), &[1, 2, 3]);
        assert!(a.downcast_ref::<String>().is_none());
        assert!(a.expect_mut::<String>().unwrap_err().to_string().contains("String"));
    }

    #[test]
    fn frame_new_checks_the_byte_count() {
        let shape = FrameShape::rgb(2, 3);
        assert!(Frame::new(shape, vec![0; 18]).is_ok());
        let e = Frame::new(shape, vec![0; 17]).unwrap_err();
        assert!(matches!(e, ModelError::BadInput(_)));
        assert!(e.to_string().contains("expected 18"), "{e}");
    }
}
