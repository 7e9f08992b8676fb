//! The loaded run config of any task ([`RunConfig`]), one of the two object types the task
//! registry hands out; the other, a built task of any model, is
//! [`jinn_train::train_loop::AnyTask`].

use jinn_data::FrameShape;
use jinn_graph::GraphRunConfig;
use jinn_text::lm::LmRunConfig;
use jinn_train::config::TrainConfig;
use jinn_world::{DynamicsRunConfig, LamRunConfig, TokenizerRunConfig};
use std::any::Any;

/// A task's whole run config (`model`, `train`, `data`, …), loaded from TOML with `--set`s.
pub trait RunConfig: Any + Send + Sync {
    /// The `train` section.
    fn train(&self) -> &TrainConfig;
    /// The `train` section, to adjust before building (`jinn bench train` turns validation off).
    fn train_mut(&mut self) -> &mut TrainConfig;
    /// The model kind the config selects (`model.kind`; the task name where it has one kind),
    /// which picks the registry row that builds it.
    fn kind(&self) -> String;
    /// Frames the model sees, where the config says (the dynamics take theirs from the
    /// tokenizer run).
    fn frames(&self) -> Option<FrameShape>;
    /// Clip length `data.seq_len` of a world-model task.
    fn seq_len(&self) -> Option<usize>;
    /// The resolved config as JSON (what checkpoints store).
    fn to_json(&self) -> serde_json::Value;
    /// For downcasting to the concrete config.
    fn as_any(&self) -> &dyn Any;
}

/// [`RunConfig`] for a run config type with a `train` section, given how it names its kind,
/// frames and clip length.
macro_rules! run_config {
    ($config:ty, kind: |$k:ident| $kind:expr, frames: |$f:ident| $frames:expr) => {
        run_config!($config, kind: |$k| $kind, frames: |$f| $frames, seq_len: |c| Some(c.data.seq_len));
    };
    ($config:ty, kind: |$k:ident| $kind:expr, frames: |$f:ident| $frames:expr, seq_len: |$s:ident| $seq_len:expr) => {
        impl RunConfig for $config {
            fn train(&self) -> &TrainConfig {
                &self.train
            }
            fn train_mut(&mut self) -> &mut TrainConfig {
                &mut self.train
            }
            fn kind(&self) -> String {
                let $k = self;
                $kind
            }
            fn frames(&self) -> Option<FrameShape> {
                let $f = self;
                $frames
            }
            fn seq_len(&self) -> Option<usize> {
                let $s = self;
                $seq_len
            }
            fn to_json(&self) -> serde_json::Value {
                jinn_train::config::to_json(self)
            }
            fn as_any(&self) -> &dyn Any {
                self
            }
        }
    };
}

run_config!(TokenizerRunConfig, kind: |c| c.model.kind().to_string(), frames: |c| Some(c.model.coder().frames()));
run_config!(LamRunConfig, kind: |_c| "lam".into(), frames: |c| Some(c.model.coder.frames()));
// The dynamics kind as configs spell it (`maskgit`, `causal`, `diffusion`); the frames come
// from the tokenizer run.
run_config!(DynamicsRunConfig, kind: |c| c.model.kind().to_string(), frames: |_c| None);
run_config!(LmRunConfig, kind: |c| spelling(&c.model.arch), frames: |_c| None, seq_len: |_c| None);
run_config!(GraphRunConfig, kind: |c| spelling(&c.model.kind), frames: |_c| None, seq_len: |_c| None);

/// A kind as configs spell it (`maskgit`, `rsf`, `rotation`, …): its serde name.
fn spelling(kind: &impl serde::Serialize) -> String {
    match jinn_train::config::to_json(kind) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}
