//! `POST /v1/lm/generate`: text generation, streamed as server-sent events (or one JSON reply
//! with `"stream": false`).
//!
//! Events: `token` `{"text": piece}` per generated piece, then `done` `{"prompt_tokens",
//! "tokens", "queue_ms", "model_ms", "tokens_per_s"}`, or `error` `{"error": message}` when the
//! model fails mid-stream. A bad request (invalid UTF-8 or JSON, empty or too long prompt, out-
//! of-range sampling parameters, a prompt longer than the model's context) is a 4xx JSON error
//! before any event is sent.

use crate::api::App;
use crate::error::{parse_json, ApiError};
use crate::text::{GenerateParams, GenerateStats};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Body of `POST /v1/lm/generate`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateRequest {
    prompt: String,
    /// Omitted: 200, or the server's limit when lower.
    max_tokens: Option<usize>,
    #[serde(default = "default_temperature")]
    temperature: f32,
    #[serde(default = "default_top_k")]
    top_k: usize,
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_stream")]
    stream: bool,
}

/// Tokens generated when the request does not say.
const DEFAULT_MAX_TOKENS: usize = 200;

fn default_temperature() -> f32 {
    0.8
}
fn default_top_k() -> usize {
    40
}
fn default_stream() -> bool {
    true
}

/// The closing summary of a generation (the `done` event, or the JSON reply's fields).
#[derive(Debug, Serialize, Deserialize)]
pub struct GenerateSummary {
    /// Tokens the prompt encoded to.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub tokens: usize,
    /// Waiting for the model (other requests' generation), ms.
    pub queue_ms: f64,
    /// The generation itself, ms.
    pub model_ms: f64,
    /// Generated tokens per second of model time.
    pub tokens_per_s: f64,
}

/// What the generating thread tells the response.
enum Message {
    Piece(String),
    Done(GenerateSummary),
    Failed(ApiError),
}

/// Parse and check a request against the server's limits.
fn check(body: &[u8], app: &App) -> Result<(GenerateParams, bool), ApiError> {
    if let Err(e) = std::str::from_utf8(body) {
        return Err(ApiError::bad_request(format!(
            "the request body is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        )));
    }
    let req: GenerateRequest = parse_json(body)?;
    let limits = &app.limits;
    if req.prompt.is_empty() {
        return Err(ApiError::bad_request("\"prompt\" is empty; give at least one character"));
    }
    if req.prompt.len() > limits.max_prompt_bytes {
        return Err(ApiError::bad_request(format!(
            "\"prompt\" has {} bytes; the limit is {} (see the server's --max-prompt-bytes)",
            req.prompt.len(),
            limits.max_prompt_bytes
        )));
    }
    let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS.min(limits.max_new_tokens));
    if max_tokens == 0 || max_tokens > limits.max_new_tokens {
        return Err(ApiError::bad_request(format!(
            "\"max_tokens\" is {max_tokens}; expected 1 to {}",
            limits.max_new_tokens
        )));
    }
    if !(req.temperature.is_finite() && req.temperature >= 0.0) {
        return Err(ApiError::bad_request(format!(
            "\"temperature\" is {}; expected a finite number ≥ 0 (0: argmax)",
            req.temperature
        )));
    }
    let params = GenerateParams {
        prompt: req.prompt,
        max_tokens,
        temperature: req.temperature,
        top_k: req.top_k,
        seed: req.seed,
    };
    Ok((params, req.stream))
}

/// Run the generation on a blocking thread, sending pieces to `tx`; stops when `tx` closes.
fn spawn_generation(app: Arc<App>, params: GenerateParams, tx: mpsc::Sender<Message>) {
    tokio::task::spawn_blocking(move || {
        let Some(model) = app.text.clone() else { return };
        let t = Instant::now();
        let _guard = app.text_lock.lock().unwrap_or_else(|p| p.into_inner());
        let queue_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let mut emit = |piece: &str| tx.blocking_send(Message::Piece(piece.to_string())).is_ok();
        let result = model.generate(&params, &mut emit);
        let model_ms = t.elapsed().as_secs_f64() * 1e3;
        let message = match result {
            Ok(GenerateStats { prompt_tokens, tokens }) => Message::Done(GenerateSummary {
                prompt_tokens,
                tokens,
                queue_ms,
                model_ms,
                tokens_per_s: tokens as f64 / (model_ms / 1e3).max(1e-9),
            }),
            Err(e) => Message::Failed(e.into()),
        };
        let _ = tx.blocking_send(message);
    });
}

/// `POST /v1/lm/generate`.
pub async fn generate(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if app.text.is_none() {
        return Err(ApiError::not_found("no text model is loaded (start the server with `jinn lm serve`)"));
    }
    let (params, stream) = check(&body?, &app)?;
    let (tx, mut rx) = mpsc::channel::<Message>(64);
    spawn_generation(app, params, tx);
    // The first message decides the status: a prompt the model refuses is a 4xx, not a stream.
    let first = rx.recv().await.ok_or_else(|| ApiError::internal("the generation thread ended early"))?;
    if let Message::Failed(e) = first {
        return Err(e);
    }
    if !stream {
        return collect(first, rx).await.map(|reply| Json(reply).into_response());
    }
    let events = futures_util::stream::unfold((Some(first), rx), |(pending, mut rx)| async move {
        let message = match pending {
            Some(m) => m,
            None => rx.recv().await?,
        };
        Some((Ok::<Event, Infallible>(to_event(message)), (None, rx)))
    });
    Ok(Sse::new(events).into_response())
}

fn to_event(message: Message) -> Event {
    let (name, data) = match message {
        Message::Piece(text) => ("token", serde_json::json!({ "text": text })),
        Message::Done(summary) => ("done", serde_json::to_value(summary).unwrap_or_default()),
        Message::Failed(e) => ("error", serde_json::json!({ "error": e.message })),
    };
    Event::default().event(name).data(data.to_string())
}

/// The non-streaming reply: the whole text and the summary.
#[derive(Debug, Serialize, Deserialize)]
pub struct GenerateReply {
    /// Everything generated.
    pub text: String,
    /// Counts and timings.
    #[serde(flatten)]
    pub summary: GenerateSummary,
}

async fn collect(first: Message, mut rx: mpsc::Receiver<Message>) -> Result<GenerateReply, ApiError> {
    let mut text = String::new();
    let mut message = first;
    loop {
        match message {
            Message::Piece(piece) => text.push_str(&piece),
            Message::Done(summary) => return Ok(GenerateReply { text, summary }),
            Message::Failed(e) => return Err(e),
        }
        message = rx
            .recv()
            .await
            .ok_or_else(|| ApiError::internal("the generation thread ended without a summary"))?;
    }
}
