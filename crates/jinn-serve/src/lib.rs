//! Play a learned world model in the browser: an HTTP API (axum) and an embedded play page.
//!
//! The server drives any [`WorldModel`] (frames `[H, W, C]` u8 in, an action, the next frame
//! out); [`fake::FakeWorld`] is a deterministic stand-in for tests and benchmarks.
//!
//! - [`model`]: the model trait, frames, opaque session state.
//! - [`server`]: routes, limits, the idle reaper, binding; [`api`]: the `/v1` handlers.
//! - [`session`]: the session store; [`png`]: frames as (base64) PNG; [`error`]: JSON errors.
//! - [`page`]: the embedded page; [`openapi`]: `/v1/openapi.json`.
//! - [`text`]: the text-model trait behind [`lm_api`] (`POST /v1/lm/generate`, streamed as
//!   server-sent events); [`fake_text::FakeText`] stands in for it in tests.

pub mod api;
pub mod error;
pub mod fake;
pub mod fake_text;
pub mod lm_api;
pub mod model;
pub mod openapi;
pub mod page;
pub mod png;
pub mod server;
pub mod session;
pub mod text;

pub use model::{ActionInfo, Frame, ModelError, ModelInfo, SplitInfo, StartSource, WorldModel, WorldState};
pub use server::{bind_warning, Models, ServeConfig, Server};
pub use session::Limits;
pub use text::{GenerateParams, GenerateStats, TextModel, TextModelInfo};
