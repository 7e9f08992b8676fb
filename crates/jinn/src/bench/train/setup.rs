//! The tasks `jinn bench train` times, built by the task registry ([`crate::tasks`]) that
//! `jinn train` uses: the tokenizer and LAM tasks from their run configs, and the dynamics
//! task on freshly initialised, seeded tokenizer and LAM runs written by the checkpoint writer
//! into a temporary directory (the frozen components `jinn train dynamics --lam RUN` loads).

use super::{generate_clips, prepare_train, TrainBenchArgs};
use crate::tasks::{self, Actions, AnyTask, RunConfig, TaskInputs};
use anyhow::{bail, Context};
use burn::tensor::Device;
use jinn_data::FrameShape;
use jinn_train::config::TrainConfig;
use jinn_world::{
    CoderConfig, DataConfig, DynamicsConfig, DynamicsKind, DynamicsRunConfig, LamConfig, LamRunConfig,
    MaeConfig, TokenizerConfig, TokenizerKind, TokenizerRunConfig,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The dynamics benchmark config: a dynamics run config (`model`, `lam`, `train`, `data`) plus
/// the `tokenizer` architecture of the fresh tokenizer run it is assembled on. The fresh LAM
/// run has the `lam` architecture.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamicsBenchConfig {
    /// Architecture of the frozen tokenizer: VQ for MaskGIT and causal dynamics, MAE for
    /// diffusion (Jasmine's MAE defaults when the section is absent and `model.kind` is
    /// `diffusion`).
    pub tokenizer: TokenizerConfig,
    /// The dynamics model, of any kind.
    pub model: DynamicsConfig,
    /// Architecture of the frozen LAM.
    pub lam: LamConfig,
    /// Steps, batch, schedule and optimiser (also stored in the fresh component runs).
    pub train: TrainConfig,
    /// Clip length and loader threads.
    pub data: DataConfig,
}

/// The task `task` (`tokenizer` or `lam`) of `jinn train TASK`, and its train settings.
pub(super) fn registered(
    task: &str,
    a: &TrainBenchArgs,
    tmp: &Path,
    device: Device,
) -> anyhow::Result<(Box<dyn AnyTask>, TrainConfig)> {
    let mut cfg = tasks::load_config(task, a.config.as_deref(), &a.overrides)?;
    prepare_train(cfg.train_mut(), a);
    let frames = cfg.frames().context("the task's config names no frame size")?;
    let seq_len = cfg.seq_len().context("the task's config names no clip length")?;
    let data = data_dir(a, tmp, frames, seq_len)?;
    let built = tasks::build(task, cfg.as_ref(), &TaskInputs::new(&data, device))?;
    println!("{}; {}", describe(cfg.as_ref()), describe_run(cfg.train(), seq_len, a));
    Ok((built.task, cfg.train().clone()))
}

/// The dynamics task of `jinn train dynamics --tokenizer TOK --lam LAM`, with TOK and LAM fresh
/// seeded runs in `tmp`, its train settings and its kind.
pub(super) fn dynamics(
    a: &TrainBenchArgs,
    tmp: &Path,
    device: Device,
) -> anyhow::Result<(Box<dyn AnyTask>, TrainConfig, DynamicsKind)> {
    let mut cfg: DynamicsBenchConfig = jinn_train::config::load(a.config.as_deref(), &a.overrides)?;
    prepare_train(&mut cfg.train, a);
    let kind = cfg.model.kind();
    let wanted = kind.entry().tokenizer;
    if wanted == TokenizerKind::Mae && cfg.tokenizer == TokenizerConfig::default() {
        cfg.tokenizer = TokenizerConfig::Mae(MaeConfig::default());
    }
    if cfg.tokenizer.kind() != wanted {
        bail!(
            "model.kind is {kind}, which runs on a `{wanted}` tokenizer; the [tokenizer] section is a `{}` \
             tokenizer (set tokenizer.kind = \"{wanted}\" with that kind's fields)",
            cfg.tokenizer.kind()
        );
    }
    let tokenizer_cfg =
        TokenizerRunConfig { model: cfg.tokenizer.clone(), train: cfg.train.clone(), data: cfg.data.clone() };
    let frames = RunConfig::frames(&tokenizer_cfg).expect("a tokenizer config names its frames");
    let data = data_dir(a, tmp, frames, cfg.data.seq_len)?;

    // The frozen components, as `jinn train tokenizer` / `jinn train lam` would checkpoint them
    // before their first update.
    let tokenizer_run = tmp.join("tokenizer-run");
    write_fresh_run("tokenizer", &tokenizer_cfg, &data, &device, &tokenizer_run)
        .context("initialising the benchmark tokenizer")?;
    let lam_cfg = LamRunConfig { model: cfg.lam.clone(), train: cfg.train.clone(), data: cfg.data.clone() };
    let lam_run = tmp.join("lam-run");
    write_fresh_run("lam", &lam_cfg, &data, &device, &lam_run).context("initialising the benchmark LAM")?;

    let run_cfg = DynamicsRunConfig {
        model: cfg.model.clone(),
        lam: cfg.lam.clone(),
        train: cfg.train,
        data: cfg.data,
    };
    let inputs = TaskInputs {
        tokenizer: Some(&tokenizer_run),
        actions: Actions::LamRun(&lam_run),
        ..TaskInputs::new(&data, device)
    };
    let built = tasks::build("dynamics", &run_cfg, &inputs)?;
    println!(
        "{} on tokenizer {} (frozen) and LAM {} (frozen); {}",
        describe(&run_cfg),
        describe_tokenizer(&cfg.tokenizer),
        describe_lam(&run_cfg.lam),
        describe_run(&run_cfg.train, run_cfg.data.seq_len, a)
    );
    Ok((built.task, run_cfg.train, kind))
}

/// Build `task` from `cfg` on `data` and write its untrained model as the step-0 checkpoint
/// of a run in `run_dir`.
fn write_fresh_run(
    task: &str,
    cfg: &dyn RunConfig,
    data: &Path,
    device: &Device,
    run_dir: &Path,
) -> anyhow::Result<()> {
    let built = tasks::build(task, cfg, &TaskInputs::new(data, device.clone()))?;
    Ok(built.task.write_fresh_run(built.stored, cfg.train(), run_dir)?)
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

/// One line describing the model of a run config.
fn describe(cfg: &dyn RunConfig) -> String {
    let any = cfg.as_any();
    if let Some(c) = any.downcast_ref::<TokenizerRunConfig>() {
        return format!("tokenizer {}", describe_tokenizer(&c.model));
    }
    if let Some(c) = any.downcast_ref::<LamRunConfig>() {
        return format!("LAM {}", describe_lam(&c.model));
    }
    if let Some(c) = any.downcast_ref::<DynamicsRunConfig>() {
        let m = &c.model;
        return format!(
            "{} dynamics width {}, FFN {}, {} heads, {} blocks, action dim {}",
            m.kind(),
            m.model_dim,
            m.ffn_dim,
            m.num_heads,
            m.num_blocks,
            m.action_dim
        );
    }
    format!("{} model", cfg.kind())
}

/// One line describing a tokenizer architecture.
fn describe_tokenizer(m: &TokenizerConfig) -> String {
    let latents = match m {
        TokenizerConfig::Vq(vq) => format!("{} codes", vq.num_codes),
        TokenizerConfig::Mae(_) => format!("MAE latent {}", m.coder().latent_dim),
    };
    format!("{}, {latents}", describe_coder(m.coder()))
}

/// Frames, patch and encoder/decoder shapes, as one line.
fn describe_coder(c: &CoderConfig) -> String {
    format!(
        "{}×{}×{}, patch {}, width {}, FFN {}, {} heads, {}+{} blocks",
        c.height,
        c.width,
        c.channels,
        c.patch,
        c.model_dim,
        c.ffn_dim,
        c.num_heads,
        c.encoder_blocks,
        c.decoder_blocks,
    )
}

/// The batch and step counts of a benchmark run.
fn describe_run(train: &TrainConfig, seq_len: usize, a: &TrainBenchArgs) -> String {
    format!("batch {} × {seq_len} frames; {} warm-up + {} timed steps", train.batch_size, a.warmup, a.steps)
}

/// One line describing a LAM architecture.
fn describe_lam(m: &LamConfig) -> String {
    format!("{}, latent {}, {} codes", describe_coder(&m.coder), m.coder.latent_dim, m.num_codes)
}
