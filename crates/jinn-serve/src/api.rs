//! The `/v1` JSON API: health, models, sessions (create, step, undo, frames, GIF, delete).

use crate::error::{parse_json, ApiError};
use crate::model::{Frame, StartSource, WorldModel};
use crate::png::{decode_png, encode_png, from_base64, to_base64};
use crate::session::{Limits, Session, Sessions};
use crate::text::TextModel;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jinn_data::gif_writer::{write_gif, GifOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Shared server state.
pub struct App {
    /// The world model served, if any.
    pub model: Option<Arc<dyn WorldModel>>,
    /// The text model served, if any (`POST /v1/lm/generate`).
    pub text: Option<Arc<dyn TextModel>>,
    /// Open sessions.
    pub sessions: Sessions,
    /// Limits.
    pub limits: Limits,
    /// Held during every world-model call: inference is serialised per model.
    pub model_lock: Mutex<()>,
    /// Held during every text generation.
    pub text_lock: Mutex<()>,
}

impl App {
    /// The world model, or 404 when only a text model is served.
    pub fn world(&self) -> Result<&dyn WorldModel, ApiError> {
        self.model.as_deref().ok_or_else(|| {
            ApiError::not_found("no world model is loaded (this server only generates text: /v1/lm/generate)")
        })
    }

    /// Run `f` with the model lock held; returns its result and the ms spent waiting for the lock.
    fn with_model<T>(&self, f: impl FnOnce(&dyn WorldModel) -> T) -> Result<(T, f64), ApiError> {
        let model = self.world()?;
        let t = Instant::now();
        let _guard = self.model_lock.lock().unwrap_or_else(|p| p.into_inner());
        let waited = ms(t);
        Ok((f(model), waited))
    }
}

type AppState = State<Arc<App>>;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Run blocking work (model calls, PNG/GIF encoding) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("request task failed: {e}")))?
}

/// `GET /v1/health`.
pub async fn health(State(app): AppState) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "model": app.model.as_ref().map(|m| m.info().name.clone()),
        "text_model": app.text.as_ref().map(|m| m.info().name.clone()),
        "sessions": app.sessions.len(),
        "max_sessions": app.limits.max_sessions,
    }))
}

/// `GET /v1/models`.
pub async fn models(State(app): AppState) -> Json<serde_json::Value> {
    let world: Vec<_> = app.model.iter().map(|m| m.info()).collect();
    let text: Vec<_> = app.text.iter().map(|m| m.info()).collect();
    Json(json!({ "models": world, "text_models": text }))
}

/// Body of `POST /v1/world/sessions`; `{}` starts from a frame of the model's own data.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    /// Must name the loaded model when given.
    model: Option<String>,
    /// Start from a dataset episode.
    dataset: Option<DatasetStart>,
    /// Start from uploaded frames: base64 PNGs (a `data:` URL prefix is accepted), oldest first.
    frames: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DatasetStart {
    split: String,
    #[serde(default)]
    episode: usize,
    #[serde(default)]
    frame: usize,
}

/// The reply of create, step and undo: the session's current frame.
#[derive(Debug, Serialize, Deserialize)]
pub struct FrameReply {
    /// The session id.
    pub id: String,
    /// Index of this frame in the session (GET .../frames/{index}).
    pub index: usize,
    /// PNG, base64.
    pub frame: String,
    /// Steps that can be undone now.
    pub undo_steps: usize,
    /// Timings of this request, ms.
    pub timings: Timings,
}

impl FrameReply {
    /// The reply for session `s`'s newest frame, already encoded as `png`.
    fn latest(id: String, s: &Session, png: &[u8], timings: Timings) -> Self {
        FrameReply { id, index: s.frames.len() - 1, frame: to_base64(png), undo_steps: s.undo.len(), timings }
    }
}

/// Where a request's time went, in milliseconds.
#[derive(Debug, Serialize, Deserialize, Default)]
pub struct Timings {
    /// Waiting for the model (other sessions' inference).
    pub queue_ms: f64,
    /// The model call itself.
    pub model_ms: f64,
    /// PNG encoding.
    pub encode_ms: f64,
    /// Everything the server did for this request.
    pub server_ms: f64,
}

/// `POST /v1/world/sessions`.
pub async fn create_session(
    State(app): AppState,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let t0 = Instant::now();
    let req: CreateRequest = parse_json(&body?)?;
    let info = app.world()?.info();
    if let Some(name) = &req.model {
        if name != &info.name {
            return Err(ApiError::not_found(format!("no model \"{name}\"; loaded: \"{}\"", info.name)));
        }
    }
    app.sessions.check_capacity()?;
    let reply = blocking(move || {
        let frames = start_frames(&app, req)?;
        let ((state, queue_ms), model_ms) = {
            let t = Instant::now();
            let (state, waited) = app.with_model(|m| m.start(&frames))?;
            ((state?, waited), ms(t) - waited)
        };
        let t = Instant::now();
        let png = encode(frames.last().expect("start frames checked non-empty"))?;
        let encode_ms = ms(t);
        let index = frames.len() - 1;
        let id = app.sessions.insert(Session { state, frames, undo: VecDeque::new() })?;
        let timings = Timings { queue_ms, model_ms, encode_ms, server_ms: ms(t0) };
        Ok(FrameReply { id, index, frame: to_base64(&png), undo_steps: 0, timings })
    })
    .await?;
    Ok((StatusCode::CREATED, Json(reply)).into_response())
}

/// The start frames a create request asks for, checked against the model.
fn start_frames(app: &App, req: CreateRequest) -> Result<Vec<Frame>, ApiError> {
    let model = app.world()?;
    let info = model.info();
    let frames = match (req.dataset, req.frames) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("give either \"dataset\" or \"frames\", not both"))
        }
        (None, Some(uploads)) => {
            if uploads.is_empty() || uploads.len() > info.max_start_frames {
                return Err(ApiError::bad_request(format!(
                    "\"frames\" has {} entries; expected 1 to {} base64 PNGs",
                    uploads.len(),
                    info.max_start_frames
                )));
            }
            let decode = |(i, text): (usize, &String)| {
                from_base64(text)
                    .and_then(|b| decode_png(&b, info.frame))
                    .map_err(|e| ApiError::bad_frame(i, e))
            };
            uploads.iter().enumerate().map(decode).collect::<Result<Vec<_>, _>>()?
        }
        (Some(d), None) => model.start_frames(&StartSource::Dataset {
            split: d.split,
            episode: d.episode,
            frame: d.frame,
        })?,
        (None, None) => model.start_frames(&StartSource::Sample)?,
    };
    if frames.is_empty()
        || frames.iter().any(|f| f.shape != info.frame || f.pixels.len() != f.shape.frame_bytes())
    {
        return Err(ApiError::internal(format!(
            "the model returned {} start frame(s), not all of its frame shape {:?}",
            frames.len(),
            info.frame
        )));
    }
    Ok(frames)
}

fn encode(frame: &Frame) -> Result<Vec<u8>, ApiError> {
    encode_png(frame).map_err(|e| ApiError::internal(format!("encoding a frame: {e}")))
}

/// Body of `POST .../step`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepRequest {
    /// Action id, `0..actions`.
    action: u32,
}

/// `POST /v1/world/sessions/{id}/step` `{"action": a}`.
pub async fn step(
    State(app): AppState,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<FrameReply>, ApiError> {
    let t0 = Instant::now();
    let Path(id) = id?;
    let req: StepRequest = parse_json(&body?)?;
    let info = app.world()?.info().clone();
    let actions = info.actions.len();
    if req.action as usize >= actions {
        return Err(ApiError::bad_request(format!(
            "unknown action {}; this model has actions 0 to {} (see /v1/models)",
            req.action,
            actions.saturating_sub(1)
        )));
    }
    let entry = app.sessions.get(&id)?;
    let reply = blocking(move || {
        let mut s = entry.lock()?;
        if s.frames.len() >= app.limits.max_frames {
            return Err(ApiError::conflict(format!(
                "the session holds {} frames, the limit; download it and reset",
                s.frames.len()
            )));
        }
        let before = s.state.clone();
        let t = Instant::now();
        let (frame, queue_ms) = app.with_model(|m| m.step(&mut s.state, req.action))?;
        let model_ms = ms(t) - queue_ms;
        let frame = match frame {
            Ok(f) if f.shape == info.frame && f.pixels.len() == f.shape.frame_bytes() => f,
            Ok(f) => {
                s.state = before;
                return Err(ApiError::internal(format!("the model returned a frame of shape {:?}", f.shape)));
            }
            Err(e) => {
                s.state = before;
                return Err(e.into());
            }
        };
        let t = Instant::now();
        let png = encode(&frame)?;
        let encode_ms = ms(t);
        s.undo.push_back(before);
        if s.undo.len() > app.limits.max_undo {
            s.undo.pop_front();
        }
        s.frames.push(frame);
        let timings = Timings { queue_ms, model_ms, encode_ms, server_ms: ms(t0) };
        Ok(FrameReply::latest(id, &s, &png, timings))
    })
    .await?;
    Ok(Json(reply))
}

/// `POST /v1/world/sessions/{id}/undo`: drop the last step; 409 when there is none to undo.
pub async fn undo(
    State(app): AppState,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<FrameReply>, ApiError> {
    let t0 = Instant::now();
    let Path(id) = id?;
    let entry = app.sessions.get(&id)?;
    let reply = blocking(move || {
        let mut s = entry.lock()?;
        let state = s.undo.pop_back().ok_or_else(|| ApiError::conflict("nothing to undo"))?;
        s.state = state;
        s.frames.pop();
        let t = Instant::now();
        let png = encode(s.frames.last().expect("a step was undone, so a start frame remains"))?;
        let timings = Timings { encode_ms: ms(t), server_ms: ms(t0), ..Default::default() };
        Ok(FrameReply::latest(id, &s, &png, timings))
    })
    .await?;
    Ok(Json(reply))
}

/// `GET /v1/world/sessions/{id}`: frame count and undo depth.
pub async fn session_info(
    State(app): AppState,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Path(id) = id?;
    let entry = app.sessions.get(&id)?;
    let s = entry.lock()?;
    Ok(Json(json!({ "id": id, "frames": s.frames.len(), "undo_steps": s.undo.len() })))
}

/// `GET /v1/world/sessions/{id}/frames/{i}`: frame `i` as a PNG.
pub async fn frame(
    State(app): AppState,
    path: Result<Path<(String, usize)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((id, i)) = path?;
    let entry = app.sessions.get(&id)?;
    let png = blocking(move || {
        let s = entry.lock()?;
        let f = s.frames.get(i).ok_or_else(|| {
            ApiError::not_found(format!("no frame {i}; the session has frames 0 to {}", s.frames.len() - 1))
        })?;
        encode(f)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "no-store")], png).into_response())
}

/// `GET /v1/world/sessions/{id}/gif`: every frame of the session as an animated GIF.
pub async fn gif(
    State(app): AppState,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let entry = app.sessions.get(&id)?;
    let shape = app.world()?.info().frame;
    let bytes = blocking(move || {
        let pixels: Vec<u8> = entry.lock()?.frames.iter().flat_map(|f| f.pixels.iter().copied()).collect(); // [T, H, W, C]

        // Upscale small frames to about 256 pixels on the long side.
        let scale = (256 / shape.height.max(shape.width)).clamp(1, 8);
        let options = GifOptions { scale, fps: 10.0, label_height: 0, ..Default::default() };
        let dir = tempfile::tempdir().map_err(|e| ApiError::internal(format!("temporary directory: {e}")))?;
        let path = dir.path().join("session.gif");
        write_gif(&path, &pixels, shape, &options)
            .map_err(|e| ApiError::internal(format!("writing the GIF: {e}")))?;
        std::fs::read(&path).map_err(|e| ApiError::internal(format!("reading the GIF back: {e}")))
    })
    .await?;
    let disposition = format!("attachment; filename=\"jinn-{}.gif\"", &id[..id.len().min(8)]);
    Ok(([(header::CONTENT_TYPE, "image/gif".to_string()), (header::CONTENT_DISPOSITION, disposition)], bytes)
        .into_response())
}

/// `DELETE /v1/world/sessions/{id}`: 204.
pub async fn delete_session(
    State(app): AppState,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path(id) = id?;
    app.sessions.remove(&id)?;
    Ok(StatusCode::NO_CONTENT)
}
