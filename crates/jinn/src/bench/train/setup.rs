//! The tasks `jinn bench train` times, built with the constructors `jinn train` uses: the
//! tokenizer and LAM tasks from their run configs, and the MaskGIT dynamics task on freshly
//! initialised, seeded tokenizer and LAM runs written by the checkpoint writer into a
//! temporary directory (the frozen components `jinn train dynamics --lam RUN` loads).

use super::{generate_clips, prepare_train, TrainBenchArgs};
use crate::train::dynamics::token_dynamics_task;
use anyhow::{bail, Context};
use burn::tensor::Device;
use jinn_data::FrameShape;
use jinn_train::checkpoint::{write_checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::train_loop::{TrainTask, Updater};
use jinn_world::{
    ActionSource, DataConfig, DynamicsConfig, DynamicsKind, DynamicsRunConfig, DynamicsTask, LamConfig,
    LamRunConfig, LamTask, TokenizerConfig, TokenizerRunConfig, TokenizerTask,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The dynamics benchmark config: a dynamics run config (`model`, `lam`, `train`, `data`) plus
/// the `tokenizer` architecture of the fresh tokenizer run it is assembled on. The fresh LAM
/// run has the `lam` architecture.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamicsBenchConfig {
    /// Architecture of the frozen tokenizer.
    pub tokenizer: TokenizerConfig,
    /// The dynamics model (`maskgit` or `causal`).
    pub model: DynamicsConfig,
    /// Architecture of the frozen LAM.
    pub lam: LamConfig,
    /// Steps, batch, schedule and optimiser (also stored in the fresh component runs).
    pub train: TrainConfig,
    /// Clip length and loader threads.
    pub data: DataConfig,
}

/// The tokenizer task of `jinn train tokenizer`, and its train settings.
pub(super) fn tokenizer(
    a: &TrainBenchArgs,
    tmp: &Path,
    device: Device,
) -> anyhow::Result<(TokenizerTask, TrainConfig)> {
    let mut cfg: TokenizerRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    prepare_train(&mut cfg.train, a);
    let m = &cfg.model;
    let data = data_dir(a, tmp, frame(m.height, m.width, m.channels), cfg.data.seq_len)?;
    let task = TokenizerTask::from_config(&cfg, &data, device)
        .with_context(|| format!("setting up tokenizer training on {}", data.display()))?;
    println!("tokenizer {}; {}", describe_tokenizer(m), describe_run(&cfg.train, cfg.data.seq_len, a));
    Ok((task, cfg.train))
}

/// The LAM task of `jinn train lam`, and its train settings.
pub(super) fn lam(a: &TrainBenchArgs, tmp: &Path, device: Device) -> anyhow::Result<(LamTask, TrainConfig)> {
    let mut cfg: LamRunConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    prepare_train(&mut cfg.train, a);
    let m = &cfg.model;
    let data = data_dir(a, tmp, frame(m.height, m.width, m.channels), cfg.data.seq_len)?;
    let task = LamTask::from_config(&cfg, &data, device)
        .with_context(|| format!("setting up LAM training on {}", data.display()))?;
    println!("LAM {}; {}", describe_lam(m), describe_run(&cfg.train, cfg.data.seq_len, a));
    Ok((task, cfg.train))
}

/// The dynamics task of `jinn train dynamics --tokenizer TOK --lam LAM`, with TOK and LAM fresh
/// seeded runs in `tmp`, and its train settings.
pub(super) fn dynamics(
    a: &TrainBenchArgs,
    tmp: &Path,
    device: Device,
) -> anyhow::Result<(DynamicsTask, TrainConfig)> {
    let mut cfg: DynamicsBenchConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    prepare_train(&mut cfg.train, a);
    if cfg.model.kind == DynamicsKind::Diffusion {
        bail!(
            "model.kind is diffusion; jinn bench train --task dynamics times MaskGIT or causal dynamics \
             on a VQ tokenizer"
        );
    }
    let t = &cfg.tokenizer;
    let data = data_dir(a, tmp, frame(t.height, t.width, t.channels), cfg.data.seq_len)?;

    // The frozen components, as `jinn train tokenizer` / `jinn train lam` would checkpoint them
    // before their first update.
    let tokenizer_cfg =
        TokenizerRunConfig { model: cfg.tokenizer.clone(), train: cfg.train.clone(), data: cfg.data.clone() };
    let tokenizer_run = tmp.join("tokenizer-run");
    let task = TokenizerTask::from_config(&tokenizer_cfg, &data, device.clone())
        .context("initialising the benchmark tokenizer")?;
    write_fresh_run(&task, &tokenizer_cfg, &tokenizer_cfg.train, &tokenizer_run)?;
    drop(task);
    let lam_cfg = LamRunConfig { model: cfg.lam.clone(), train: cfg.train.clone(), data: cfg.data.clone() };
    let lam_run = tmp.join("lam-run");
    let task =
        LamTask::from_config(&lam_cfg, &data, device.clone()).context("initialising the benchmark LAM")?;
    write_fresh_run(&task, &lam_cfg, &lam_cfg.train, &lam_run)?;
    drop(task);

    let run_cfg = DynamicsRunConfig {
        model: cfg.model.clone(),
        lam: cfg.lam.clone(),
        train: cfg.train,
        data: cfg.data,
    };
    let (task, _) =
        token_dynamics_task(&run_cfg, &tokenizer_run, ActionSource::LamRun(&lam_run), &data, &device)?;
    let (m, t) = (&run_cfg.model, &cfg.tokenizer);
    println!(
        "{:?} dynamics width {}, FFN {}, {} heads, {} blocks, action dim {}; on tokenizer {} (frozen) \
         and LAM {} (frozen); {}",
        m.kind,
        m.model_dim,
        m.ffn_dim,
        m.num_heads,
        m.num_blocks,
        m.action_dim,
        describe_tokenizer(t),
        describe_lam(&run_cfg.lam),
        describe_run(&run_cfg.train, run_cfg.data.seq_len, a)
    );
    Ok((task, run_cfg.train))
}

/// Write `task`'s model (and a fresh optimiser) as the step-0 checkpoint of a run into
/// `run_dir`, with `cfg` as the stored run config and `train`'s seed as the run seed — what the
/// training loop writes.
fn write_fresh_run<T: TrainTask, C: Serialize>(
    task: &T,
    cfg: &C,
    train: &TrainConfig,
    run_dir: &Path,
) -> anyhow::Result<()> {
    let state = TrainState {
        step: 0,
        model_kind: task.kind().to_string(),
        config: jinn_train::config::to_json(cfg),
        seed: train.seed,
        loader: None,
        val_loader: None,
        metrics_head: Vec::new(),
        extra: Default::default(),
    };
    write_checkpoint(run_dir, &Updater::new(task, &train.optim)?.snapshot(task, state)?)
        .with_context(|| format!("writing the fresh {} run {}", task.kind(), run_dir.display()))?;
    Ok(())
}

/// `--data`, or a generated dataset of `frame`-sized frames in `tmp/data`.
fn data_dir(a: &TrainBenchArgs, tmp: &Path, frame: FrameShape, seq_len: usize) -> anyhow::Result<PathBuf> {
    if let Some(d) = &a.data {
        return Ok(d.clone());
    }
    let dir = tmp.join("data");
    generate_clips(frame, seq_len, &dir)?;
    Ok(dir)
}

/// A frame shape from a model config's fields.
fn frame(height: usize, width: usize, channels: usize) -> FrameShape {
    FrameShape { height, width, channels }
}

/// One line describing a tokenizer architecture.
fn describe_tokenizer(m: &TokenizerConfig) -> String {
    format!(
        "{}×{}×{}, patch {}, width {}, FFN {}, {} heads, {}+{} blocks, {} codes",
        m.height,
        m.width,
        m.channels,
        m.patch,
        m.model_dim,
        m.ffn_dim,
        m.num_heads,
        m.encoder_blocks,
        m.decoder_blocks,
        m.num_codes
    )
}

/// The batch and step counts of a benchmark run.
fn describe_run(train: &TrainConfig, seq_len: usize, a: &TrainBenchArgs) -> String {
    format!("batch {} × {seq_len} frames; {} warm-up + {} timed steps", train.batch_size, a.warmup, a.steps)
}

/// One line describing a LAM architecture.
fn describe_lam(m: &LamConfig) -> String {
    format!(
        "{}×{}×{}, patch {}, width {}, FFN {}, {} heads, {}+{} blocks, latent {}, {} codes",
        m.height,
        m.width,
        m.channels,
        m.patch,
        m.model_dim,
        m.ffn_dim,
        m.num_heads,
        m.encoder_blocks,
        m.decoder_blocks,
        m.latent_dim,
        m.num_codes
    )
}
