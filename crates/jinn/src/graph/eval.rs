//! `jinn graph eval`: filtered ranking metrics of a trained run.

use crate::device::DeviceArgs;
use anyhow::Context;
use jinn_graph::eval::{evaluate, FilterIndex};
use jinn_graph::{KnowledgeGraph, TrainedGraph};
use std::path::PathBuf;

/// Arguments of `jinn graph eval`.
#[derive(clap::Args)]
pub struct GraphEvalArgs {
    /// Run directory (its newest good checkpoint) or one `step_*` checkpoint directory.
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Graph directory (train/valid/test.txt); every name must be in the run's vocabulary.
    #[arg(long)]
    pub data: PathBuf,
    /// Split to rank: train, valid or test.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Print filtered MRR and Hits@1/3/10 (both prediction directions).
pub fn run(a: GraphEvalArgs) -> anyhow::Result<()> {
    let trained = TrainedGraph::load(&a.ckpt, &a.device.device())
        .with_context(|| format!("loading graph model from {}", a.ckpt.display()))?;
    let graph = KnowledgeGraph::load_with_vocab(&a.data, trained.entities.clone(), trained.relations.clone())
        .with_context(|| format!("reading {} with the model's vocabulary", a.data.display()))?;
    let triples = graph.split(&a.split).context("--split")?;
    let filter = FilterIndex::for_graph(&graph);
    let m = evaluate(
        &trained.model,
        triples,
        &filter,
        graph.num_relations(),
        trained.config.objective.eval_batch,
    );
    println!(
        "{} ({:?}, step {}) on {} {}: {} queries, filtered MRR {:.4}, Hits@1 {:.4}, Hits@3 {:.4}, Hits@10 {:.4}",
        a.ckpt.display(),
        trained.model.kind(),
        trained.step,
        a.data.display(),
        a.split,
        m.count,
        m.mrr,
        m.hits1,
        m.hits3,
        m.hits10
    );
    Ok(())
}
