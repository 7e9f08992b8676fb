//! The HTTP server: routes, limits, the idle-session reaper, binding and shutdown.

use crate::api::{self, App};
use crate::error::ApiError;
use crate::model::WorldModel;
use crate::session::{Limits, Sessions};
use crate::text::TextModel;
use crate::{lm_api, openapi, page};
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// Limits.
    pub limits: Limits,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig { bind: SocketAddr::from(([127, 0, 0, 1], 8123)), limits: Limits::default() }
    }
}

/// A warning to print when `addr` is reachable from other machines (not loopback).
pub fn bind_warning(addr: &SocketAddr) -> Option<String> {
    (!addr.ip().is_loopback()).then(|| {
        format!(
            "listening on {addr}, which is not a loopback address: anyone who can reach this machine \
             can use the model (there is no authentication)"
        )
    })
}

/// The router: the page at `/`, the API under `/v1`, JSON errors for unknown routes and methods.
pub fn router(app: Arc<App>) -> Router {
    let limit = app.limits.max_body_bytes;
    Router::new()
        .route("/", get(page::index))
        .route("/app.js", get(page::script))
        .route("/style.css", get(page::style))
        .route("/favicon.ico", get(|| async { axum::http::StatusCode::NO_CONTENT }))
        .route("/v1/health", get(api::health))
        .route("/v1/models", get(api::models))
        .route("/v1/openapi.json", get(openapi::openapi))
        .route("/v1/world/sessions", axum::routing::post(api::create_session))
        .route("/v1/world/sessions/{id}", get(api::session_info).delete(api::delete_session))
        .route("/v1/world/sessions/{id}/step", axum::routing::post(api::step))
        .route("/v1/world/sessions/{id}/undo", axum::routing::post(api::undo))
        .route("/v1/world/sessions/{id}/frames/{i}", get(api::frame))
        .route("/v1/world/sessions/{id}/gif", get(api::gif))
        .route("/v1/lm/generate", axum::routing::post(lm_api::generate))
        .fallback(|method: Method, uri: Uri| async move {
            ApiError::not_found(format!("no route {method} {uri}; the API is described at /v1/openapi.json"))
        })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not allowed on {}", uri.path()),
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    app: Arc<App>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    reaper: JoinHandle<()>,
}

/// The models one server serves: a world model (play page, `/v1/world`), a text model
/// (`/v1/lm/generate`), or both.
#[derive(Clone, Default)]
pub struct Models {
    /// The world model, if any.
    pub world: Option<Arc<dyn WorldModel>>,
    /// The text model, if any.
    pub text: Option<Arc<dyn TextModel>>,
}

impl Server {
    /// Bind `config.bind` and serve the world model `model` in the current tokio runtime.
    pub async fn start(model: Arc<dyn WorldModel>, config: ServeConfig) -> std::io::Result<Server> {
        Self::start_models(Models { world: Some(model), text: None }, config).await
    }

    /// Bind `config.bind` and serve `models` (at least one) in the current tokio runtime.
    pub async fn start_models(models: Models, config: ServeConfig) -> std::io::Result<Server> {
        if models.world.is_none() && models.text.is_none() {
            return Err(std::io::Error::other("nothing to serve: give a world model, a text model or both"));
        }
        let listener = tokio::net::TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        let app = Arc::new(App {
            model: models.world,
            text: models.text,
            text_lock: Mutex::new(()),
            sessions: Sessions::new(config.limits.max_sessions),
            limits: config.limits.clone(),
            model_lock: Mutex::new(()),
        });
        let reaper = tokio::spawn(reap_idle(app.clone()));
        let (tx, rx) = oneshot::channel::<()>();
        let service = router(app.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, service)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
        });
        Ok(Server { addr, app, shutdown: Some(tx), task, reaper })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Open sessions now.
    pub fn open_sessions(&self) -> usize {
        self.app.sessions.len()
    }

    /// Serve until the task ends (an I/O error) or `stop` resolves, then shut down gracefully.
    pub async fn run_until(mut self, stop: impl std::future::Future<Output = ()>) -> std::io::Result<()> {
        tokio::select! {
            r = &mut self.task => return r.map_err(std::io::Error::other)?,
            _ = stop => {}
        }
        self.shutdown().await
    }

    /// Stop accepting connections, finish open requests, stop the reaper.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.reaper.abort();
        (&mut self.task).await.map_err(std::io::Error::other)?
    }
}

/// Close idle sessions: checks a few times per timeout (at least every 5 s, at most every 10 ms).
async fn reap_idle(app: Arc<App>) {
    let timeout = app.limits.idle_timeout;
    let period = (timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
    let mut tick = tokio::time::interval(period);
    loop {
        tick.tick().await;
        let n = app.sessions.reap(timeout);
        if n > 0 {
            tracing::info!("closed {n} session(s) idle for more than {timeout:?}");
        }
    }
}
