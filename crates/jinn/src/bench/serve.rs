//! `jinn bench serve`: what the HTTP server adds to a world-model step.
//!
//! Drives `/v1/world/sessions/{id}/step` over loopback with keep-alive connections and compares
//! its latency with calling the model directly in the same process, interleaved in rounds so
//! machine noise hits both alike. Uses the fake model (optionally with a simulated inference
//! time), or a trained world model with `--ckpt RUN --data DIR`.

use crate::args::parse_frame_shape;
use crate::device::DeviceArgs;
use anyhow::{ensure, Context};
use jinn_data::FrameShape;
use jinn_serve::api::FrameReply;
use jinn_serve::fake::FakeWorld;
use jinn_serve::{Limits, ServeConfig, Server, StartSource, WorldModel};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `jinn bench serve`.
#[derive(clap::Args)]
pub struct ServeBenchArgs {
    /// Frame size HxW of the fake model.
    #[arg(long, default_value = "64x64", value_parser = parse_frame_shape)]
    pub size: FrameShape,
    /// Steps per measurement (split over 5 interleaved rounds).
    #[arg(long, default_value_t = 500)]
    pub steps: usize,
    /// Simulated inference time per step, ms (0: just the fake model's pixel shuffle).
    #[arg(long, default_value_t = 0.0)]
    pub model_ms: f64,
    /// Concurrent clients (one session each) for the throughput row.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// A trained dynamics run to drive instead of the fake model (needs `--data`).
    #[arg(long, requires = "data")]
    pub ckpt: Option<std::path::PathBuf>,
    /// Dataset the real model's sessions start from.
    #[arg(long)]
    pub data: Option<std::path::PathBuf>,
    /// MaskGIT refinement steps per frame for the real model (default: `jinn play`'s).
    #[arg(long, default_value_t = crate::play::PLAY_MASKGIT_STEPS)]
    pub maskgit_steps: usize,
    /// Frames the real model's dynamics sees per step (default: `jinn play`'s).
    #[arg(long)]
    pub window: Option<usize>,
    /// Compute device of the real model.
    #[command(flatten)]
    pub device: DeviceArgs,
}

const ROUNDS: usize = 5;

/// Run the benchmark and print its table.
pub fn run(a: ServeBenchArgs) -> anyhow::Result<()> {
    ensure!(a.steps >= ROUNDS, "--steps must be at least {ROUNDS}");
    ensure!(a.clients >= 1, "--clients must be at least 1");
    ensure!(a.model_ms.is_finite() && a.model_ms >= 0.0, "--model-ms must be a non-negative number");
    let delay = Duration::from_secs_f64(a.model_ms / 1e3);
    let model: Arc<dyn WorldModel> = match &a.ckpt {
        Some(run) => {
            let sampler = jinn_world::SamplerConfig { maskgit_steps: a.maskgit_steps, ..Default::default() };
            Arc::new(crate::play::GenieWorld::load(
                run,
                &a.device.device(),
                a.data.as_deref(),
                sampler,
                a.window,
            )?)
        }
        None => Arc::new(FakeWorld::new(a.size, delay)),
    };
    let rt = tokio::runtime::Runtime::new()?;
    let limits = Limits { max_sessions: a.clients + 2, ..Limits::default() };
    let config = ServeConfig { bind: "127.0.0.1:0".parse()?, limits };
    let server = rt.block_on(Server::start(model.clone(), config)).context("starting the server")?;
    let base = format!("http://{}", server.local_addr());
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(true).build().into();

    match &a.ckpt {
        Some(run) => println!(
            "model {} ({}), {} MaskGIT steps, {} steps per row, {} interleaved rounds",
            run.display(),
            model.info().name,
            a.maskgit_steps,
            a.steps,
            ROUNDS
        ),
        None => println!(
            "fake model {}x{}x{}, simulated inference {} ms, {} steps per row, {} interleaved rounds",
            a.size.height, a.size.width, a.size.channels, a.model_ms, a.steps, ROUNDS
        ),
    }
    let n_actions = model.info().actions.len().max(1) as u32;
    let mut state = model.start(&model.start_frames(&StartSource::Sample)?)?;
    let session = create_session(&agent, &base)?;
    let (mut direct, mut http) = (Vec::new(), Vec::new());
    let mut server_ms = Vec::new();
    for _ in 0..ROUNDS {
        for i in 0..a.steps / ROUNDS {
            let t = Instant::now();
            model.step(&mut state, i as u32 % n_actions)?;
            direct.push(ms(t));
        }
        for i in 0..a.steps / ROUNDS {
            let t = Instant::now();
            let reply = step(&agent, &base, &session, i as u32 % n_actions)?;
            http.push(ms(t));
            server_ms.push(reply.timings.server_ms);
        }
    }

    // Throughput: `clients` threads, each its own session, stepping as fast as replies come.
    let per_client = a.steps / a.clients.max(1);
    let t = Instant::now();
    let threads: Vec<_> = (0..a.clients)
        .map(|_| {
            let (agent, base) = (agent.clone(), base.clone());
            std::thread::spawn(move || -> anyhow::Result<Vec<f64>> {
                let id = create_session(&agent, &base)?;
                (0..per_client)
                    .map(|i| {
                        let t = Instant::now();
                        step(&agent, &base, &id, i as u32 % n_actions)?;
                        Ok(ms(t))
                    })
                    .collect()
            })
        })
        .collect();
    let mut concurrent = Vec::new();
    for th in threads {
        concurrent.extend(th.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??);
    }
    let wall = t.elapsed().as_secs_f64();
    rt.block_on(server.shutdown())?;

    println!("\n{:<40} {:>9} {:>9} {:>9} {:>10}", "step", "p50 ms", "p95 ms", "mean ms", "frames/s");
    let row = |name: &str, v: &mut Vec<f64>, fps: f64| {
        let (p50, p95, mean) = stats(v);
        println!("{name:<40} {p50:>9.3} {p95:>9.3} {mean:>9.3} {fps:>10.0}");
        (p50, p95, mean)
    };
    let (_, _, direct_mean) = stats(&mut direct.clone());
    let (_, _, http_mean) = stats(&mut http.clone());
    let (d50, _, _) = row("model.step() direct (baseline)", &mut direct, 1e3 / direct_mean);
    let (h50, h95, _) = row("HTTP step, 1 client (round trip)", &mut http, 1e3 / http_mean);
    row("  of which inside the server", &mut server_ms, f64::NAN);
    let n = concurrent.len() as f64;
    row(&format!("HTTP step, {} clients (aggregate)", a.clients), &mut concurrent, n / wall);
    println!(
        "\nserver overhead per step (p50): {:.3} ms; HTTP/direct p50 ratio {:.1}; target p95 ≤ 50 ms: {}",
        h50 - d50,
        h50 / d50.max(1e-9),
        if h95 <= 50.0 { "met" } else { "MISSED" }
    );
    Ok(())
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// (p50, p95, mean) of `v` (sorted in place).
fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), v.iter().sum::<f64>() / v.len() as f64)
}

fn create_session(agent: &ureq::Agent, base: &str) -> anyhow::Result<String> {
    let mut res = agent.post(format!("{base}/v1/world/sessions")).send("{}").context("creating a session")?;
    let reply: FrameReply = serde_json::from_slice(&res.body_mut().read_to_vec()?)?;
    Ok(reply.id)
}

fn step(agent: &ureq::Agent, base: &str, id: &str, action: u32) -> anyhow::Result<FrameReply> {
    let mut res = agent
        .post(format!("{base}/v1/world/sessions/{id}/step"))
        .header("content-type", "application/json")
        .send(format!("{{\"action\": {action}}}"))
        .context("stepping")?;
    Ok(serde_json::from_slice(&res.body_mut().read_to_vec()?)?)
}

#[cfg(test)]
mod tests {
    use super::stats;

    #[test]
    fn percentiles_of_a_known_sample() {
        let mut v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        assert_eq!(stats(&mut v), (51.0, 96.0, 51.0));
    }
}
