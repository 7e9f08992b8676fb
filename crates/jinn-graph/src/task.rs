//! Training the [`GraphModel`] with the shared loop ([`jinn_train::train_loop`]).
//!
//! **Objective.** 1-vs-all: for a batch of training edges `(h, r, t)` (reciprocals
//! included) the loss is the softmax cross-entropy of `t` among all entities scored for
//! `(h, r, ?)`, plus `n3_weight ×` the batch-mean N3 penalty ([`GraphModel::n3`]).
//!
//! **Batches.** The edges are visited in epochs; epoch `k` is the permutation drawn from
//! `rng_for(seed, "edge-order", k)`, and the step-`s` batch is positions
//! `[s·B, (s+1)·B)` of the endless sequence of epochs (in a data-parallel run, `B` is the
//! global batch `batch_size × ranks` and rank `r` trains on the `r`-th slice of each
//! micro-batch, [`jinn_train::distributed`]). A batch is a pure function of
//! `(seed, step)`, so a resumed run is bit-identical to an uninterrupted one with no loader
//! state in the checkpoint. The vocabularies are stored in the checkpoint (`state.extra`) so
//! that evaluation and queries map names to the ids the model was trained with.
//!
//! **Validation** ranks every valid triple (filtered MRR, Hits@1/3/10), whatever `val_batches`.

use crate::error::GraphError;
use crate::eval::{evaluate, FilterIndex};
use crate::model::{ids, GraphModel, GraphModelConfig};
use crate::triples::{with_reciprocals, KnowledgeGraph, Triple, Vocab};
use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor};
use jinn_data::rng::rng_for;
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::schedule::{LrSchedule, ScheduleKind};
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, TrainTask};
use jinn_train::{Result, TrainError};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Model kind stored in graph checkpoints.
pub const GRAPH_KIND: &str = "graph";

/// Loss settings (the `objective` config section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ObjectiveConfig {
    /// Weight of the N3 penalty.
    pub n3_weight: f64,
    /// Queries per scoring batch in validation and evaluation.
    pub eval_batch: usize,
}

impl Default for ObjectiveConfig {
    fn default() -> Self {
        ObjectiveConfig { n3_weight: 3e-3, eval_batch: 512 }
    }
}

/// A whole graph run config: `model`, `train` and `objective` sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphRunConfig {
    /// Architecture.
    pub model: GraphModelConfig,
    /// Steps, batch, schedule, optimiser, logging and checkpoint cadence.
    pub train: TrainConfig,
    /// Loss weights and evaluation batch.
    pub objective: ObjectiveConfig,
}

impl Default for GraphRunConfig {
    /// Defaults sized for UMLS on 2 CPU cores (chosen by validation MRR, see
    /// docs/graph-reasoning.md).
    fn default() -> Self {
        GraphRunConfig {
            model: GraphModelConfig::default(),
            train: TrainConfig {
                steps: 1000,
                batch_size: 256,
                grad_accum: 1,
                seed: 0,
                lr: LrSchedule {
                    kind: ScheduleKind::Cos,
                    init_lr: 0.0,
                    max_lr: 1e-1,
                    decay_end: 0.0,
                    warmup_steps: 50,
                    decay_steps: 0,
                },
                optim: jinn_train::optim::OptimConfig {
                    beta_1: 0.9,
                    beta_2: 0.999,
                    epsilon: 1e-8,
                    weight_decay: 0.0,
                    ..jinn_train::optim::OptimConfig::default()
                },
                clip_norm: None,
                log_every: 50,
                val_every: 500,
                val_batches: 1,
                image_every: 0,
                ckpt_every: 500,
                keep_last: 2,
                keep_every: 0,
                ..TrainConfig::default()
            },
            objective: ObjectiveConfig::default(),
        }
    }
}

impl GraphRunConfig {
    /// Check every section; errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.train.validate()?;
        self.model.validate()?;
        let o = &self.objective;
        if !(o.n3_weight.is_finite() && o.n3_weight >= 0.0) {
            return Err(TrainError::config(
                "objective.n3_weight",
                format!("must be ≥ 0, got {}", o.n3_weight),
            ));
        }
        if o.eval_batch == 0 {
            return Err(TrainError::config("objective.eval_batch", "must be ≥ 1"));
        }
        Ok(())
    }
}

/// The graph model's [`TrainTask`].
pub struct GraphTask {
    model: GraphModel,
    cfg: GraphRunConfig,
    graph: Arc<KnowledgeGraph>,
    edges: Vec<Triple>,
    filter: FilterIndex,
    /// The permutation of the last epoch used (a cache: recomputable from the seed).
    order: Option<(u64, Vec<u32>)>,
}

impl GraphTask {
    /// A task training a fresh model (initialised from the run seed) on `graph`, on the
    /// autodiff `device`.
    pub fn new(cfg: &GraphRunConfig, graph: Arc<KnowledgeGraph>, device: &Device) -> Result<Self> {
        cfg.validate()?;
        let model =
            cfg.model.init(graph.num_entities(), 2 * graph.num_relations(), cfg.train.seed, device)?;
        Ok(GraphTask {
            model,
            cfg: cfg.clone(),
            edges: with_reciprocals(&graph.train, graph.num_relations()),
            filter: FilterIndex::for_graph(&graph),
            graph,
            order: None,
        })
    }

    /// Training edge at position `pos` of the endless epoch sequence.
    fn edge_at(&mut self, pos: u64) -> Triple {
        let n = self.edges.len() as u64;
        let epoch = pos / n;
        if self.order.as_ref().is_none_or(|(e, _)| *e != epoch) {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.shuffle(&mut rng_for(self.cfg.train.seed, "edge-order", epoch));
            self.order = Some((epoch, order));
        }
        let order = &self.order.as_ref().expect("set above").1;
        self.edges[order[(pos % n) as usize] as usize]
    }

    /// Cross-entropy and N3 of one micro-batch of edges.
    fn loss(&self, batch: &[Triple]) -> (Tensor<1>, Tensor<1>) {
        let device = self.model.device();
        let col = |f: fn(&Triple) -> usize| ids(&batch.iter().map(f).collect::<Vec<_>>(), &device);
        let (h, r, t) = (col(|x| x.head), col(|x| x.relation), col(|x| x.tail));
        let logits = self.model.score_all(self.model.query(h.clone(), r.clone())); // [b, E]
        let targets: Tensor<2, Int> = t.clone().unsqueeze_dim(1); // [b, 1]
        let ce = log_softmax(logits, 1).gather(1, targets).mean().neg(); // [1]
        (ce, self.model.n3(h, r, t))
    }
}

/// Host `f64` of a one-element tensor.
fn scalar(t: &Tensor<1>) -> f64 {
    t.clone().into_scalar::<f32>() as f64
}

impl TrainTask for GraphTask {
    type Model = GraphModel;

    fn model(&self) -> &GraphModel {
        &self.model
    }

    fn set_model(&mut self, model: GraphModel) {
        self.model = model;
    }

    fn kind(&self) -> &str {
        GRAPH_KIND
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        // This rank's slice of the global micro-batch: edges by their global sample index.
        let micro = self.cfg.train.rank_micro_batch() as u64;
        let batch: Vec<Triple> = (0..micro).map(|i| self.edge_at(ctx.first_sample + i)).collect();
        let (ce, n3) = self.loss(&batch);
        let (ce_value, n3_value) = (scalar(&ce), scalar(&n3));
        let weight = self.cfg.objective.n3_weight;
        Ok(MicroBatch {
            objective: Objective::Loss(ce + n3.mul_scalar(weight)),
            metrics: Metrics::from([
                ("loss".to_string(), ce_value + weight * n3_value),
                ("cross_entropy".to_string(), ce_value),
                ("n3".to_string(), n3_value),
            ]),
        })
    }

    fn validate(&mut self, _step: u64, _batches: usize) -> Result<Metrics> {
        let model = self.model.valid();
        let m = evaluate(
            &model,
            &self.graph.valid,
            &self.filter,
            self.graph.num_relations(),
            self.cfg.objective.eval_batch,
        );
        Ok(m.named("").into_iter().collect())
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        let names = |v: &Vocab| serde_json::json!(v.names());
        state.extra.insert("entities".into(), names(&self.graph.entities));
        state.extra.insert("relations".into(), names(&self.graph.relations));
        Ok(())
    }

    fn check_checkpoint(&self, checkpoint: &Checkpoint) -> Result<()> {
        let (entities, relations) = stored_vocab(checkpoint)?;
        if entities != self.graph.entities || relations != self.graph.relations {
            return Err(TrainError::checkpoint(
                &checkpoint.dir,
                "its entity/relation vocabulary differs from the graph being trained (another --data?)",
            ));
        }
        Ok(())
    }
}

/// The entity and relation vocabularies stored in a graph checkpoint.
pub fn stored_vocab(checkpoint: &Checkpoint) -> Result<(Vocab, Vocab)> {
    let read = |key: &'static str| -> Result<Vocab> {
        let names: Vec<String> =
            checkpoint.state.extra.get(key).and_then(|v| serde_json::from_value(v.clone()).ok()).ok_or_else(
                || TrainError::checkpoint(&checkpoint.dir, format!("state.json has no `extra.{key}` list")),
            )?;
        Ok(Vocab::from_names(if key == "entities" { "entity" } else { "relation" }, names)?)
    };
    Ok((read("entities")?, read("relations")?))
}

/// A trained model with its config and vocabularies, for evaluation and queries.
#[derive(Debug)]
pub struct TrainedGraph {
    /// The model (on a device without autodiff).
    pub model: GraphModel,
    /// The run config it was trained with.
    pub config: GraphRunConfig,
    /// Entity vocabulary (ids as in the model).
    pub entities: Vocab,
    /// Relation vocabulary (named relations; reciprocal of `r` is `r + R`).
    pub relations: Vocab,
    /// The step it was saved at.
    pub step: u64,
}

impl TrainedGraph {
    /// Load from a run directory (its newest good checkpoint) or one checkpoint directory.
    pub fn load(path: &Path, device: &Device) -> Result<TrainedGraph> {
        let (checkpoint, config): (_, GraphRunConfig) =
            jinn_train::checkpoint::open_trained(path, GRAPH_KIND)?;
        let (entities, relations) = stored_vocab(&checkpoint)?;
        let fresh = config.model.init(entities.len(), 2 * relations.len(), 0, device)?;
        let model = checkpoint.load_model(fresh)?;
        Ok(TrainedGraph { model, config, entities, relations, step: checkpoint.state.step })
    }

    /// Resolve a relation name, `name^-1` (or `inv:name`) meaning its reciprocal.
    pub fn relation_id(&self, name: &str, flag: &str) -> std::result::Result<usize, GraphError> {
        let (base, inverse) = match name.strip_suffix("^-1").or_else(|| name.strip_prefix("inv:")) {
            Some(b) => (b, true),
            None => (name, false),
        };
        let r = self.relations.lookup("relation", base, || flag.to_string())?;
        Ok(if inverse { r + self.relations.len() } else { r })
    }
}

#[cfg(test)]
mod tests;
