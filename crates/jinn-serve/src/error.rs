//! API errors: an HTTP status and a message, sent as `{ "error": "..." }`.

use crate::model::ModelError;
use crate::png::PngError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An error reply of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status (4xx: the request's fault, 5xx: the server's).
    pub status: StatusCode,
    /// Human-readable explanation.
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into() }
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404 Not Found.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409 Conflict (the session is not in a state that allows the request).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 500 Internal Server Error (logged).
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::error!("{message}");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// An uploaded frame that failed to decode: 400 naming which one.
    pub fn bad_frame(index: usize, e: PngError) -> Self {
        Self::bad_request(format!("frames[{index}] {e}"))
    }
}

impl From<ModelError> for ApiError {
    fn from(e: ModelError) -> Self {
        match e {
            ModelError::BadInput(m) => ApiError::bad_request(m),
            ModelError::NotFound(m) => ApiError::not_found(m),
            e @ ModelError::Failed(_) => ApiError::internal(e.to_string()),
        }
    }
}

impl From<axum::extract::rejection::BytesRejection> for ApiError {
    fn from(r: axum::extract::rejection::BytesRejection) -> Self {
        let status = r.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "request body too large (see the server's --max-body-bytes)".to_string()
        } else {
            format!("could not read the request body: {}", r.body_text())
        };
        ApiError::new(status, message)
    }
}

impl From<axum::extract::rejection::PathRejection> for ApiError {
    fn from(r: axum::extract::rejection::PathRejection) -> Self {
        ApiError::new(r.status(), format!("bad path: {}", r.body_text()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// Parse a JSON request body into `T`: an empty body reads as `{}`; malformed JSON or wrong
/// fields give 400 with serde's explanation (line, column, field).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let text = if body.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { body };
    serde_json::from_slice(text).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}
