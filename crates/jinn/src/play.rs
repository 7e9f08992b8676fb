//! `jinn play`: serve a world model and its play page on a local port.

use crate::args::parse_frame_shape;
use anyhow::{bail, Context};
use jinn_data::FrameShape;
mod genie_world;

pub use genie_world::GenieWorld;
use jinn_serve::fake::FakeWorld;
use jinn_serve::{bind_warning, Limits, ServeConfig, Server, WorldModel};
use jinn_world::SamplerConfig;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `jinn play`.
#[derive(clap::Args)]
pub struct PlayArgs {
    /// Run directory of a trained world model.
    #[arg(long, required_unless_present = "fake")]
    pub ckpt: Option<PathBuf>,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8123)]
    pub port: u16,
    /// Address to listen on; anything but loopback exposes the model to the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Do not open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// Serve the deterministic fake model (arrows roll the frame, space inverts it) instead of a
    /// checkpoint: for trying the page and the API.
    #[arg(long, conflicts_with = "ckpt")]
    pub fake: bool,
    /// Frame size of the fake model, HxW.
    #[arg(long, default_value = "64x64", value_parser = parse_frame_shape)]
    pub fake_size: FrameShape,
    /// Most sessions open at once.
    #[arg(long, default_value_t = 16)]
    pub max_sessions: usize,
    /// Close sessions unused for this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub idle_timeout_s: f64,
    /// Largest request body (uploaded PNGs), bytes.
    #[arg(long, default_value_t = 8 << 20)]
    pub max_body_bytes: usize,
    /// Dataset directory (with train/, val/, … splits) that sessions can start from.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// MaskGIT refinement steps per generated frame.
    #[arg(long, default_value_t = 25)]
    pub maskgit_steps: usize,
    /// Sampling temperature.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f64,
    /// Take the most likely token instead of sampling.
    #[arg(long)]
    pub argmax: bool,
}

/// Serve until Ctrl-C.
pub fn run(a: PlayArgs) -> anyhow::Result<()> {
    if !(a.idle_timeout_s.is_finite() && a.idle_timeout_s > 0.0) {
        bail!("--idle-timeout-s {}: expected a positive number of seconds", a.idle_timeout_s);
    }
    if a.max_sessions == 0 {
        bail!("--max-sessions must be at least 1");
    }
    let model: Arc<dyn WorldModel> = match &a.ckpt {
        _ if a.fake => Arc::new(FakeWorld::new(a.fake_size, Duration::ZERO)),
        Some(run) => load_model(run, &a)?,
        None => bail!("give --ckpt RUN (or --fake)"),
    };
    let limits = Limits {
        max_sessions: a.max_sessions,
        idle_timeout: Duration::from_secs_f64(a.idle_timeout_s),
        max_body_bytes: a.max_body_bytes,
        ..Limits::default()
    };
    let config = ServeConfig { bind: SocketAddr::new(a.bind, a.port), limits };
    if let Some(w) = bind_warning(&config.bind) {
        tracing::warn!("{w}");
    }
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let name = model.info().name.clone();
        let server = Server::start(model, config.clone())
            .await
            .with_context(|| format!("listening on {} (--bind/--port)", config.bind))?;
        let url = server.url();
        println!("jinn play: serving model \"{name}\" at {url} (Ctrl-C to stop)");
        if !a.no_browser {
            open_browser(&url);
        }
        server
            .run_until(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")
    })
}

/// The world model of a run directory.
fn load_model(run: &Path, a: &PlayArgs) -> anyhow::Result<Arc<dyn WorldModel>> {
    if !run.is_dir() {
        bail!("--ckpt {}: no such run directory", run.display());
    }
    let sampler = SamplerConfig {
        maskgit_steps: a.maskgit_steps,
        temperature: a.temperature,
        argmax: a.argmax,
        ..SamplerConfig::default()
    };
    Ok(Arc::new(GenieWorld::load(run, a.data.as_deref(), sampler)?))
}

/// Open `url` in the desktop's browser, or say where to point one.
fn open_browser(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok();
    if !opened {
        println!("open {url} in a browser");
    }
}
