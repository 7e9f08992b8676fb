//! `jinn play`: serve a world model and its play page on a local port.

use crate::args::parse_frame_shape;
use crate::device::DeviceArgs;
use anyhow::{bail, Context};
use jinn_data::FrameShape;
mod action_keys;
mod genie_world;
mod lm_text;

pub use genie_world::GenieWorld;
use jinn_serve::fake::FakeWorld;
use jinn_serve::{bind_warning, Limits, Models, ServeConfig, Server, TextModel, WorldModel};
use jinn_world::SamplerConfig;
pub use lm_text::LmText;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `jinn play`.
#[derive(clap::Args)]
pub struct PlayArgs {
    /// Run directory of a trained world model.
    #[arg(long, required_unless_present_any = ["fake", "lm"])]
    pub ckpt: Option<PathBuf>,
    /// Run directory of a trained language model (`jinn lm train`), served at
    /// `POST /v1/lm/generate`; alone or beside a world model.
    #[arg(long)]
    pub lm: Option<PathBuf>,
    /// Longest generation prompt, bytes.
    #[arg(long, default_value_t = 16 << 10)]
    pub max_prompt_bytes: usize,
    /// Most tokens one generation request may ask for.
    #[arg(long, default_value_t = 2048)]
    pub max_new_tokens: usize,
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
    /// MaskGIT refinement steps per generated frame (8: on the demo model, 15-frame rollouts
    /// score the same PSNR as with the reference's 25, at a third of the latency).
    #[arg(long, default_value_t = PLAY_MASKGIT_STEPS)]
    pub maskgit_steps: usize,
    /// Frames the dynamics sees per step: 2..=its training clip length (default 4, or the
    /// training clip length if shorter). Fewer frames answer faster.
    #[arg(long)]
    pub window: Option<usize>,
    /// Sampling temperature.
    #[arg(long, default_value_t = PLAY_TEMPERATURE, value_parser = parse_temperature)]
    pub temperature: f64,
    /// Take the most likely token instead of sampling.
    #[arg(long)]
    pub argmax: bool,
    /// Compute device of the served models.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Serve until Ctrl-C.
pub fn run(a: PlayArgs) -> anyhow::Result<()> {
    if !(a.idle_timeout_s.is_finite() && a.idle_timeout_s > 0.0) {
        bail!("--idle-timeout-s {}: expected a positive number of seconds", a.idle_timeout_s);
    }
    if a.max_sessions == 0 {
        bail!("--max-sessions must be at least 1");
    }
    let world: Option<Arc<dyn WorldModel>> = match &a.ckpt {
        _ if a.fake => Some(Arc::new(FakeWorld::new(a.fake_size, Duration::ZERO))),
        Some(run) => Some(load_model(run, &a)?),
        None => None,
    };
    let text: Option<Arc<dyn TextModel>> = match &a.lm {
        Some(run) => Some(Arc::new(LmText::load(run, &a.device.device())?)),
        None => None,
    };
    if world.is_none() && text.is_none() {
        bail!("give --ckpt RUN, --lm RUN or --fake");
    }
    let limits = Limits {
        max_sessions: a.max_sessions,
        idle_timeout: Duration::from_secs_f64(a.idle_timeout_s),
        max_body_bytes: a.max_body_bytes,
        max_prompt_bytes: a.max_prompt_bytes,
        max_new_tokens: a.max_new_tokens,
        ..Limits::default()
    };
    let config = ServeConfig { bind: SocketAddr::new(a.bind, a.port), limits };
    if let Some(w) = bind_warning(&config.bind) {
        tracing::warn!("{w}");
    }
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let names: Vec<String> = world
            .iter()
            .map(|m| format!("world model \"{}\"", m.info().name))
            .chain(text.iter().map(|m| format!("text model \"{}\" (POST /v1/lm/generate)", m.info().name)))
            .collect();
        let has_world = world.is_some();
        let server = Server::start_models(Models { world, text }, config.clone())
            .await
            .with_context(|| format!("listening on {} (--bind/--port)", config.bind))?;
        let url = server.url();
        println!("jinn play: serving {} at {url} (Ctrl-C to stop)", names.join(" and "));
        if has_world && !a.no_browser {
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

/// MaskGIT steps per frame when playing (`--maskgit-steps`).
pub const PLAY_MASKGIT_STEPS: usize = 8;

/// Sampling temperature when playing (`--temperature`).
pub const PLAY_TEMPERATURE: f64 = 1.0;

/// Parses `--temperature`: a finite number ≥ 0, checked before a model is served.
pub fn parse_temperature(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("expected a finite number ≥ 0, got `{s}`")),
    }
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
    Ok(Arc::new(GenieWorld::load(run, &a.device.device(), a.data.as_deref(), sampler, a.window)?))
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
