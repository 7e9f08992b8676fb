//! Shared training machinery for every jinn model, on Burn 0.22: learning-rate schedules,
//! AdamW and SFD (AdamW with spectral control of reversible couplings) with global-norm
//! gradient clipping, atomic step checkpoints with retention, run
//! logs (JSON lines and TensorBoard event files) and TOML configs with `--set` overrides.
//!
//! Nothing here knows about a particular model: models plug in through generic
//! [`burn::module::Module`]s and their own serde config types.

pub mod checkpoint;
pub mod checkpoint_writer;
pub mod config;
pub mod distributed;
pub mod error;
pub mod metrics_log;
pub mod optim;
pub mod plot;
pub mod precision;
pub mod schedule;
pub mod tfevents;
pub mod train_loop;

pub use error::{Result, TrainError};
