//! `jinn eval tokenizer`: reconstruction quality of a tokenizer checkpoint on a split and, on
//! a built-in game's data, the objects of its reconstructions (the ceiling of a world model on
//! its tokens).
//!
//! The model config comes from the checkpoint's `state.json` (no hyperparameters repeated on
//! the command line); the split is read with the checkpoint's clip length.

use crate::device::DeviceArgs;
use crate::eval::world::print_object_rows;
use anyhow::{bail, Context};
use jinn_data::atomic_file::write_atomically;
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::objects::Game;
use jinn_train::checkpoint::{latest_good, Checkpoint, STATE_FILE};
use jinn_world::tokenizer::eval::{evaluate_with_objects, write_recon_gif};
use jinn_world::tokenizer::task::open_split;
use jinn_world::{TokenizerRunConfig, TOKENIZER_KIND};
use std::path::{Path, PathBuf};

/// Arguments of `jinn eval tokenizer`.
#[derive(clap::Args)]
pub struct EvalTokenizerArgs {
    /// Run directory (its newest good checkpoint is used) or one `step_NNNNNN` checkpoint.
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Dataset directory holding the split (as written by `jinn data gen`).
    #[arg(long)]
    pub data: PathBuf,
    /// Split to evaluate: a subdirectory of `--data`.
    #[arg(long, default_value = "val")]
    pub split: String,
    /// Batches to evaluate (each of the run's micro-batch size unless --batch-size is given).
    #[arg(long, default_value_t = 8)]
    pub batches: usize,
    /// Clips per batch (default: the run's `train.batch_size / train.grad_accum`).
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Seed of the clip sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write a GIF of ground truth | reconstruction for the first clips of the split.
    #[arg(long)]
    pub gif: Option<PathBuf>,
    /// Clips shown one after another in the GIF.
    #[arg(long, default_value_t = 4)]
    pub gif_clips: usize,
    /// Write the metrics as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `--ckpt` as a checkpoint: the directory itself if it holds a `state.json`, else the newest
/// good checkpoint of the run directory.
fn find_checkpoint(path: &Path) -> anyhow::Result<Checkpoint> {
    if !path.is_dir() {
        bail!(
            "--ckpt {}: no such directory (expected a run directory or a step_NNNNNN checkpoint)",
            path.display()
        );
    }
    if path.join(STATE_FILE).is_file() {
        return Ok(Checkpoint::open(path)?);
    }
    let found = latest_good(path)?;
    for (dir, why) in &found.skipped {
        eprintln!("skipped corrupted checkpoint {}: {why}", dir.display());
    }
    found.checkpoint.with_context(|| {
        format!("--ckpt {}: no good checkpoint (step_NNNNNN directory) in this run directory", path.display())
    })
}

/// Evaluate and print the metrics; write the GIF and JSON if asked.
pub fn run(a: EvalTokenizerArgs) -> anyhow::Result<()> {
    if a.batches == 0 {
        bail!("--batches must be ≥ 1");
    }
    let ckpt = find_checkpoint(&a.ckpt)?;
    if ckpt.state.model_kind != TOKENIZER_KIND {
        bail!(
            "checkpoint {} holds a '{}' model, not a {TOKENIZER_KIND}; use the matching `jinn eval` command",
            ckpt.dir.display(),
            ckpt.state.model_kind
        );
    }
    let cfg: TokenizerRunConfig = serde_json::from_value(ckpt.state.config.clone()).with_context(|| {
        format!(
            "checkpoint {}: its stored config is not a tokenizer run config",
            ckpt.dir.join(STATE_FILE).display()
        )
    })?;
    let device = a.device.device();
    let model = cfg
        .model
        .vq()
        .and_then(|m| m.init(&device))
        .with_context(|| format!("checkpoint {}: model config", ckpt.dir.display()))?;
    let model = ckpt.load_model(model)?;
    let data = open_split(&a.data, &a.split, &cfg)
        .with_context(|| format!("opening split '{}' of {}", a.split, a.data.display()))?;
    let batch_size = a.batch_size.unwrap_or_else(|| cfg.train.micro_batch());
    if batch_size == 0 {
        bail!("--batch-size must be ≥ 1");
    }
    let loader_cfg = LoaderConfig {
        batch_size,
        seq_len: cfg.data.seq_len,
        seed: a.seed,
        threads: 0,
        ..Default::default()
    };

    let game = data.metadata().and_then(|m| Game::from_env_name(&m.env));
    let (metrics, objects) =
        evaluate_with_objects(&model, &mut Loader::new(data.clone(), loader_cfg)?, a.batches, game)?;
    println!(
        "tokenizer at step {} ({}) on {}/{}: {} batches of {batch_size} clips × {} frames",
        ckpt.state.step,
        ckpt.dir.display(),
        a.data.display(),
        a.split,
        a.batches,
        cfg.data.seq_len
    );
    println!(
        "psnr {:.2} dB  ssim {:.4}  codebook usage {:.1}%  mse {:.6}  loss {:.6}",
        metrics["psnr"],
        metrics["ssim"],
        100.0 * metrics["codebook_usage"],
        metrics["mse"],
        metrics["loss"]
    );
    if let (Some(game), Some(o)) = (game, &objects) {
        println!(
            "objects ({}, frames 1.. of each clip, read off the frames by the detector that reads the ground truth):",
            game.name()
        );
        print_object_rows(game.name(), &[("reconstruction", &o.overall)]);
    }
    if let Some(path) = &a.json {
        let json = serde_json::json!({
            "checkpoint": ckpt.dir,
            "step": ckpt.state.step,
            "data": a.data,
            "split": a.split,
            "batches": a.batches,
            "batch_size": batch_size,
            "metrics": metrics,
            "objects": objects,
        });
        write_atomically(path, serde_json::to_string_pretty(&json)?.as_bytes())?;
        println!("metrics written to {}", path.display());
    }
    if let Some(path) = &a.gif {
        let gif_cfg = LoaderConfig { batch_size: a.gif_clips.max(1), ..loader_cfg };
        let batch = Loader::new(data, gif_cfg)?.next().context("the loader yielded no clip")??;
        write_recon_gif(&model, &batch, a.gif_clips, path)?;
        println!("ground truth | reconstruction GIF written to {}", path.display());
    }
    Ok(())
}
