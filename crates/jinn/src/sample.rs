//! `jinn sample`: roll a trained world model out from real context frames and compare the
//! rollout with the ground truth (GIF + per-frame PSNR/SSIM in metrics.json).

use crate::device::DeviceArgs;
use crate::sampler_args::SamplerArgs;
use anyhow::{bail, Context};
use burn::tensor::{Int, Tensor, TensorData};
use jinn_data::atomic_file::write_atomically;
use jinn_data::dataset::Dataset;
use jinn_data::font::draw_text;
use jinn_data::gif_writer::{write_panels_gif, GifOptions, Panel};
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::metrics::{psnr, ssim};
use jinn_world::{frames_to_u8, frames_to_unit, load_world, World};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `jinn sample`.
#[derive(clap::Args, Clone)]
pub struct SampleArgs {
    /// Dynamics run directory (its newest good checkpoint; tokenizer and LAM come with it).
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Dataset directory holding the split.
    #[arg(long)]
    pub data: PathBuf,
    /// Split to take the clip from: a subdirectory of `--data`.
    #[arg(long, default_value = "val")]
    pub split: String,
    /// Ground-truth context frames given to the model.
    #[arg(long, default_value_t = 1)]
    pub context: usize,
    /// Frames generated after the context.
    #[arg(long, default_value_t = 15)]
    pub frames: usize,
    /// Actions driving the rollout: `lam` (inferred by the model's LAM from the true clip),
    /// `gt` (the recorded actions; models trained with `--actions gt`), or a file of
    /// `context + frames − 1` action ids (LAM codes or recorded action ids), whitespace- or
    /// comma-separated.
    #[arg(long, default_value = "lam")]
    pub actions: String,
    /// Sampler settings.
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Seed of the clip choice and of the sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory (gets rollout.gif and metrics.json).
    #[arg(long, default_value = "sample")]
    pub out: PathBuf,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// What a rollout produced.
pub struct SampleReport {
    /// The GIF written.
    pub gif: PathBuf,
    /// Mean PSNR over the generated frames (dB).
    pub mean_psnr: f64,
    /// Mean SSIM over the generated frames.
    pub mean_ssim: f64,
    /// Generated frames per second (sampling and decoding).
    pub frames_per_s: f64,
}

/// Run `jinn sample` and print the metrics.
pub fn run(a: SampleArgs) -> anyhow::Result<()> {
    let r = sample_rollout(&a)?;
    println!(
        "{} generated frames: mean PSNR {:.2} dB, mean SSIM {:.4} ({:.1} frames/s)",
        a.frames, r.mean_psnr, r.mean_ssim, r.frames_per_s
    );
    println!("ground truth | generated: {}", r.gif.display());
    println!("per-frame metrics: {}", a.out.join("metrics.json").display());
    Ok(())
}

/// Sample one rollout, write `rollout.gif` and `metrics.json` into `a.out`.
pub fn sample_rollout(a: &SampleArgs) -> anyhow::Result<SampleReport> {
    if a.context == 0 || a.frames == 0 {
        bail!("--context and --frames must be ≥ 1 (got {} and {})", a.context, a.frames);
    }
    let device = a.device.device();
    let (model, _cfg, step) = load_world(&a.ckpt, &device)
        .with_context(|| format!("--ckpt {}: loading the world model", a.ckpt.display()))?;
    let world = model.as_ref();
    let s = a.context + a.frames;
    let split = a.data.join(&a.split);
    let grid = world.grid();
    let want = jinn_data::FrameShape { height: grid.height, width: grid.width, channels: grid.channels };
    let dataset = Dataset::open_for_model(&split, s, want)
        .with_context(|| format!("--data {}: opening split '{}'", a.data.display(), a.split))?;
    let shape = dataset.frame_shape();
    if (shape.height, shape.width, shape.channels) != (grid.height, grid.width, grid.channels) {
        bail!(
            "{}: frames are {}×{}×{} but the model was trained on {}×{}×{}",
            split.display(),
            shape.height,
            shape.width,
            shape.channels,
            grid.height,
            grid.width,
            grid.channels
        );
    }
    let loader_cfg =
        LoaderConfig { batch_size: 1, seq_len: s, seed: a.seed, threads: 0, ..Default::default() };
    let batch = Loader::new(Arc::new(dataset), loader_cfg)?
        .next()
        .with_context(|| format!("{}: no clip of {s} frames", split.display()))??;
    let videos = frames_to_unit(&batch.videos, [1, s, shape.height, shape.width, shape.channels], &device);

    let window = a.sampler.config(a.seed, &a.ckpt).window;
    let (actions, labels) = rollout_actions(world, &a.actions, videos.clone(), &batch, s, window)?;
    let context = world.encode(videos, window)?.first_frames(a.context); // tokens or latents
    let cfg = a.sampler.config(a.seed, &a.ckpt);
    let started = Instant::now();
    let generated = world.rollout(context, actions, s, &cfg).context("sampling the rollout")?; // [1, s, h, w, c]
    let generated = frames_to_u8(generated);
    let frames_per_s = a.frames as f64 / started.elapsed().as_secs_f64().max(1e-9);

    let fb = shape.frame_bytes();
    let truth = &batch.videos[..s * fb];
    let mut per_frame = Vec::new();
    for f in a.context..s {
        let (x, y) = (&truth[f * fb..(f + 1) * fb], &generated[f * fb..(f + 1) * fb]);
        per_frame.push(serde_json::json!({
            "frame": f,
            "action": labels[f - 1],
            "psnr": psnr(x, y, shape)?,
            "ssim": ssim(x, y, shape)?,
        }));
    }
    let mean = |key: &str| {
        per_frame.iter().map(|m| m[key].as_f64().unwrap_or(f64::NAN)).sum::<f64>() / a.frames as f64
    };
    let (mean_psnr, mean_ssim) = (mean("psnr"), mean("ssim"));

    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let gif = a.out.join("rollout.gif");
    let mut labelled = truth.to_vec();
    for f in 1..s {
        let text = format!("a{}", labels[f - 1]);
        draw_text(&mut labelled[f * fb..(f + 1) * fb], shape, 1, 1, &text, [255, 255, 0], 1)?;
    }
    let panels = [
        Panel { label: "ground truth", frames: &labelled },
        Panel { label: "generated", frames: &generated },
    ];
    write_panels_gif(&gif, &panels, shape, &GifOptions { fps: 4.0, ..Default::default() })?;
    let json = serde_json::json!({
        "checkpoint": a.ckpt,
        "step": step,
        "data": a.data,
        "split": a.split,
        "clip": { "record": batch.origins[0].record.record, "file": batch.origins[0].record.file,
                  "start": batch.origins[0].start },
        "context": a.context,
        "frames": a.frames,
        "actions": a.actions,
        "kind": format!("{:?}", world.kind()),
        "maskgit_steps": a.sampler.steps,
        "denoise_steps": a.sampler.denoise_steps,
        "context_noise": a.sampler.context_noise,
        "temperature": a.sampler.temperature,
        "argmax": a.sampler.argmax,
        "seed": a.seed,
        "mean_psnr": mean_psnr,
        "mean_ssim": mean_ssim,
        "frames_per_s": frames_per_s,
        "per_frame": per_frame,
    });
    write_atomically(a.out.join("metrics.json"), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(SampleReport { gif, mean_psnr, mean_ssim, frames_per_s })
}

/// The action vectors `[1, S−1, La]` of the rollout and their ids (for the labels).
fn rollout_actions(
    world: &dyn World,
    spec: &str,
    videos: Tensor<5>,
    batch: &jinn_data::loader::Batch,
    s: usize,
    window: Option<usize>,
) -> anyhow::Result<(Tensor<3>, Vec<i64>)> {
    let device = videos.device();
    match spec {
        "lam" => {
            if !world.has_lam() {
                bail!("--actions lam: this model was trained on recorded actions (no LAM); use --actions gt or FILE");
            }
            let (vectors, ids) = world.latent_actions(videos, None, window)?;
            let ids = ids.context("the LAM returned no code indices")?;
            Ok((vectors, ids.try_into_vec_as::<i64>().expect("integer tensor data")))
        }
        "gt" => {
            if world.has_lam() {
                bail!("--actions gt: this model uses a LAM's latent actions; use --actions lam or FILE");
            }
            let Some(recorded) = &batch.actions else {
                bail!("--actions gt: the dataset records no actions");
            };
            if batch.action_dims != 1 {
                bail!(
                    "--actions gt: expected one action id per frame, the dataset has {}",
                    batch.action_dims
                );
            }
            let ids = Tensor::<2, Int>::from_data(TensorData::new(recorded.clone(), [1, s]), &device);
            let (vectors, _) = world.latent_actions(videos, Some(ids), window)?;
            Ok((vectors, recorded[..s - 1].to_vec()))
        }
        file => {
            let ids = read_action_file(Path::new(file), s - 1)?;
            let table = world.action_table(); // [k, la]
            let [k, la] = table.dims();
            if let Some(bad) = ids.iter().find(|&&id| id < 0 || id as usize >= k) {
                bail!(
                    "--actions {file}: action id {bad} is out of range; the model has {k} actions (0..{k})"
                );
            }
            let sel = Tensor::<1, Int>::from_data(TensorData::new(ids.clone(), [s - 1]), &device);
            Ok((table.select(0, sel).reshape([1, s - 1, la]), ids))
        }
    }
}

/// Read `count` action ids (whitespace- or comma-separated integers) from `path`.
fn read_action_file(path: &Path, count: usize) -> anyhow::Result<Vec<i64>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("--actions {}: not `lam`, `gt` or a readable file of action ids", path.display())
    })?;
    let ids: Vec<i64> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.parse::<i64>().with_context(|| format!("--actions {}: `{w}` is not an integer", path.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    if ids.len() < count {
        bail!(
            "--actions {}: {} action ids, expected {count} (context + frames − 1)",
            path.display(),
            ids.len()
        );
    }
    Ok(ids[..count].to_vec())
}
