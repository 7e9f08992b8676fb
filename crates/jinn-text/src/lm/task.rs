//! Training the [`LanguageModel`] with the shared loop ([`jinn_train::train_loop`]).
//!
//! **Batches.** A training sample is a window of `max_seq + 1` consecutive tokens of the
//! training shard (inputs: the first `max_seq`, targets: the last `max_seq`), its start drawn
//! from `rng_for(seed, "lm-batch", step · grad_accum + micro)`. A batch is a pure function of
//! `(seed, step)`, so a resumed run repeats the uninterrupted one with no loader state. In a
//! data-parallel run ([`jinn_train::distributed`]) each micro-batch draws the starts of the
//! global micro-batch (`micro × ranks`) and rank `r` trains on the `r`-th slice, so the data
//! order is the same whatever the number of ranks.
//!
//! **Validation** uses fixed windows spread evenly over the held-out shard (the same every
//! time): `loss` (nats per token) and `bits_per_byte` (`loss / ln 2 × tokens / bytes` of
//! the held-out text).
//!
//! **Checkpoints** carry the tokenizer (`state.extra.tokenizer`) and the shard description,
//! so `jinn lm eval` / `generate` need only the run directory.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::rng::rng_for;
use jinn_nn::reversible::Engine;
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::distributed;
use jinn_train::schedule::{LrSchedule, ScheduleKind};
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, StepContext, TrainTask};
use jinn_train::{Result, TrainError};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::path::Path;

use super::config::LmModelConfig;
use super::data::{LmData, ShardInfo};
use super::model::LanguageModel;
use super::text_tokenizer::{TextTokenizer, TokenizerSpec};

/// Model kind stored in LM checkpoints.
pub const LM_KIND: &str = "lm";

/// Corpus settings (the `data` config section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LmDataConfig {
    /// `bytes`, or the path of an MGT tokenizer file.
    pub tokenizer: String,
    /// Whole documents (plays) held out for validation.
    pub val_docs: usize,
    /// Seed of the train/val split (independent of the run seed, so runs with different
    /// seeds validate on the same documents).
    pub split_seed: u64,
}

impl Default for LmDataConfig {
    fn default() -> Self {
        LmDataConfig { tokenizer: "bytes".into(), val_docs: 1, split_seed: 0 }
    }
}

/// A whole LM run config: `model`, `train` and `data` sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LmRunConfig {
    /// Architecture.
    pub model: LmModelConfig,
    /// Steps, batch, schedule, optimiser, logging and checkpoint cadence.
    pub train: TrainConfig,
    /// Tokenizer and split.
    pub data: LmDataConfig,
}

impl Default for LmRunConfig {
    /// A small byte-level RSF-LM for 2 CPU cores, WSD schedule.
    fn default() -> Self {
        LmRunConfig {
            model: LmModelConfig::default(),
            train: TrainConfig {
                steps: 2000,
                batch_size: 16,
                lr: LrSchedule {
                    kind: ScheduleKind::Wsd,
                    init_lr: 0.0,
                    max_lr: 1e-3,
                    decay_end: 1e-5,
                    warmup_steps: 100,
                    decay_steps: 400,
                },
                optim: jinn_train::optim::OptimConfig {
                    beta_1: 0.9,
                    beta_2: 0.95,
                    epsilon: 1e-8,
                    weight_decay: 0.01,
                    ..Default::default()
                },
                clip_norm: Some(1.0),
                log_every: 50,
                val_every: 500,
                val_batches: 8,
                image_every: 0,
                ckpt_every: 500,
                keep_last: 2,
                keep_every: 0,
                ..TrainConfig::default()
            },
            data: LmDataConfig::default(),
        }
    }
}

impl LmRunConfig {
    /// Check every section; errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.train.validate()?;
        self.model.validate()?;
        if self.train.precision != jinn_train::precision::Precision::F32 {
            return Err(TrainError::config("train.precision", "the LM trains in f32 only"));
        }
        Ok(())
    }
}

/// The language model's [`TrainTask`].
pub struct LmTask {
    model: LanguageModel,
    engine: Option<Engine>,
    cfg: LmRunConfig,
    data: LmData,
}

/// `rows` token windows `[rows, len]` from `starts` into `stream`.
fn windows(stream: &[u32], starts: &[usize], len: usize, device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i64> = starts.iter().flat_map(|&s| stream[s..s + len].iter().map(|&t| t as i64)).collect();
    Tensor::from_data(TensorData::new(ids, [starts.len(), len]), device)
}

/// Inputs and targets `[rows, seq]` of the windows of `seq + 1` tokens at `starts`.
fn inputs_targets(
    stream: &[u32],
    starts: &[usize],
    seq: usize,
    device: &Device,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    let w = windows(stream, starts, seq + 1, device); // [rows, seq + 1]
    (w.clone().narrow(1, 0, seq), w.narrow(1, 1, seq))
}

/// Host `f64` of a one-element tensor.
fn scalar(t: Tensor<1>) -> f64 {
    t.into_scalar::<f32>() as f64
}

impl LmTask {
    /// A task training a fresh model (initialised from the run seed) on `data`, on the
    /// autodiff `device`.
    pub fn new(cfg: &LmRunConfig, data: LmData, device: &Device) -> Result<Self> {
        cfg.validate()?;
        let seq = cfg.model.max_seq;
        if data.train.len() <= seq || data.val.len() <= seq {
            return Err(TrainError::config(
                "model.max_seq",
                format!(
                    "the train ({}) and val ({}) shards must each hold more than max_seq = {seq} tokens",
                    data.train.len(),
                    data.val.len()
                ),
            ));
        }
        let model = cfg.model.init(data.meta.vocab_size, cfg.train.seed, device)?;
        Ok(LmTask { model, engine: cfg.model.backprop.engine(cfg.model.arch), cfg: cfg.clone(), data })
    }

    /// Memory-free engine statistics (reconstruction checks and fallbacks), if one is used.
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }
}

/// Mean loss (nats per token) of `model` over the windows of `seq + 1` tokens at `starts`
/// of `stream`, `rows` windows per forward pass.
pub fn mean_loss(model: &LanguageModel, stream: &[u32], starts: &[usize], seq: usize, rows: usize) -> f64 {
    let device = model.device();
    let mut total = 0.0;
    for chunk in starts.chunks(rows.max(1)) {
        let (x, y) = inputs_targets(stream, chunk, seq, &device);
        total += scalar(LanguageModel::loss(model.forward(x), y)) * chunk.len() as f64;
    }
    total / starts.len().max(1) as f64
}

/// Mean loss (nats per token) of `model` on a whole token stream, every token after the
/// first predicted once: windows of `max_seq + 1` tokens overlapping by one, `rows` per
/// forward pass (the tail shorter than a window is left out). Also returns the number of
/// predicted tokens.
pub fn stream_loss(model: &LanguageModel, stream: &[u32], rows: usize) -> (f64, usize) {
    let seq = model.max_seq;
    let starts: Vec<usize> = (0..stream.len().saturating_sub(seq)).step_by(seq).collect();
    (mean_loss(model, stream, &starts, seq, rows), starts.len() * seq)
}

/// `count` window starts spread evenly over a stream of `len` tokens (windows of `seq + 1`).
pub fn spread_starts(len: usize, seq: usize, count: usize) -> Vec<usize> {
    let last = len.saturating_sub(seq + 1);
    let count = count.max(1).min(last + 1);
    (0..count).map(|i| if count == 1 { 0 } else { i * last / (count - 1) }).collect()
}

/// Bits per byte from a loss in nats per token and the text's tokens per byte.
pub fn bits_per_byte(nats_per_token: f64, info: &ShardInfo) -> f64 {
    nats_per_token / std::f64::consts::LN_2 * info.tokens_per_byte()
}

impl TrainTask for LmTask {
    type Model = LanguageModel;

    fn model(&self) -> &LanguageModel {
        &self.model
    }

    fn set_model(&mut self, model: LanguageModel) {
        self.model = model;
    }

    fn kind(&self) -> &str {
        LM_KIND
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let micro = self.cfg.train.rank_micro_batch();
        let seq = self.cfg.model.max_seq;
        let device = self.model.device();
        // The global micro-batch's windows from (seed, micro-batch index); this rank takes its slice.
        let mut rng = rng_for(self.cfg.train.seed, "lm-batch", ctx.index());
        let starts: Vec<usize> = (0..micro * distributed::world_size())
            .map(|_| rng.random_range(0..self.data.train.len() - seq))
            .skip(distributed::rank() * micro)
            .take(micro)
            .collect();
        let (x, y) = inputs_targets(&self.data.train, &starts, seq, &device);
        let (loss, grads) = self.model.forward_backward(x, y, ctx.divisor(), self.engine.as_mut())?;
        Ok(MicroBatch {
            objective: Objective::Gradients(grads),
            metrics: Metrics::from([("loss".to_string(), loss)]),
        })
    }

    fn after_update(&mut self, _ctx: &StepContext, metrics: &mut Metrics) -> Result<()> {
        if let Some(stats) = self.engine.as_ref().map(Engine::stats) {
            metrics.insert("reconstruction_fallbacks".into(), stats.fallbacks as f64);
        }
        Ok(())
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let seq = self.cfg.model.max_seq;
        let micro = self.cfg.train.micro_batch();
        let starts = spread_starts(self.data.val.len(), seq, batches * micro);
        let loss = mean_loss(&self.model.valid(), &self.data.val, &starts, seq, micro);
        Ok(Metrics::from([
            ("loss".to_string(), loss),
            ("bits_per_byte".to_string(), bits_per_byte(loss, &self.data.meta.val)),
        ]))
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        let json = |v: serde_json::Result<serde_json::Value>| {
            v.map_err(|e| TrainError::config("checkpoint", e.to_string()))
        };
        state.extra.insert("tokenizer".into(), json(serde_json::to_value(self.data.meta.tokenizer.clone()))?);
        state.extra.insert("val_shard".into(), json(serde_json::to_value(self.data.meta.val.clone()))?);
        Ok(())
    }

    fn check_checkpoint(&self, checkpoint: &Checkpoint) -> Result<()> {
        if stored_tokenizer(checkpoint)? != self.data.meta.tokenizer {
            return Err(TrainError::checkpoint(
                &checkpoint.dir,
                "its tokenizer differs from this run's data (another data.tokenizer?)",
            ));
        }
        Ok(())
    }
}

/// The tokenizer stored in an LM checkpoint.
pub fn stored_tokenizer(checkpoint: &Checkpoint) -> Result<TokenizerSpec> {
    checkpoint.state.extra.get("tokenizer").and_then(|v| serde_json::from_value(v.clone()).ok()).ok_or_else(
        || TrainError::checkpoint(&checkpoint.dir, "state.json has no readable `extra.tokenizer`"),
    )
}

/// A trained model with its config and tokenizer, for evaluation and generation.
#[derive(Debug)]
pub struct TrainedLm {
    /// The model (on a device without autodiff).
    pub model: LanguageModel,
    /// The run config it was trained with.
    pub config: LmRunConfig,
    /// Its tokenizer.
    pub tokenizer: TextTokenizer,
    /// The step it was saved at.
    pub step: u64,
}

impl TrainedLm {
    /// Load from a run directory (its newest good checkpoint) or one checkpoint directory.
    pub fn load(path: &Path, device: &Device) -> Result<TrainedLm> {
        let (checkpoint, config): (_, LmRunConfig) = jinn_train::checkpoint::open_trained(path, LM_KIND)?;
        let tokenizer = TextTokenizer::from_spec(&stored_tokenizer(&checkpoint)?)
            .map_err(|e| TrainError::checkpoint(&checkpoint.dir, e.to_string()))?;
        let fresh = config.model.init(tokenizer.vocab_size(), 0, device)?;
        let model = checkpoint.load_model(fresh)?;
        Ok(TrainedLm { model, config, tokenizer, step: checkpoint.state.step })
    }
}

#[cfg(test)]
mod tests;
