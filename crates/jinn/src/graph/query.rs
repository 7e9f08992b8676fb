//! `jinn graph query`: answer `(head, r1, r2, …, ?)` with a trained run.

use crate::device::DeviceArgs;
use anyhow::Context;
use jinn_graph::paths::{beam_scores, compose_scores, conjunction, distribution, PathQuery};
use jinn_graph::TrainedGraph;
use std::path::PathBuf;

/// Arguments of `jinn graph query`.
#[derive(clap::Args)]
pub struct GraphQueryArgs {
    /// Run directory (its newest good checkpoint) or one `step_*` checkpoint directory.
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Start entity name.
    #[arg(long)]
    pub head: String,
    /// Comma-separated relation names; `name^-1` follows a relation backwards.
    #[arg(long, value_delimiter = ',', required = true)]
    pub path: Vec<String>,
    /// A second question `HEAD:r1,r2` whose answers must also hold (conjunction by t-norm).
    #[arg(long)]
    pub and: Option<String>,
    /// Beam width over intermediate entities; 0 = compose the relation gates instead.
    #[arg(long, default_value_t = 0)]
    pub beam: usize,
    /// Answers to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

fn parse_query(trained: &TrainedGraph, head: &str, path: &[String]) -> anyhow::Result<PathQuery> {
    let head = trained.entities.lookup("entity", head, || "--head".to_string())?;
    let relations =
        path.iter().map(|r| trained.relation_id(r.trim(), "--path")).collect::<Result<Vec<_>, _>>()?;
    Ok(PathQuery { head, relations })
}

/// Print the top answers with their probabilities (composition: softmax of the scores;
/// beam: t-norm truth values renormalised to sum to 1).
pub fn run(a: GraphQueryArgs) -> anyhow::Result<()> {
    let trained = TrainedGraph::load(&a.ckpt, &a.device.device())
        .with_context(|| format!("loading graph model from {}", a.ckpt.display()))?;
    let answer = |q: &PathQuery| -> anyhow::Result<Vec<f32>> {
        Ok(if a.beam == 0 {
            distribution(&compose_scores(&trained.model, q)?)
        } else {
            beam_scores(&trained.model, q, a.beam)?
        })
    };
    let mut truth = answer(&parse_query(&trained, &a.head, &a.path)?)?;
    if let Some(spec) = &a.and {
        let (head, path) =
            spec.split_once(':').with_context(|| format!("--and expects HEAD:r1,r2,…, got `{spec}`"))?;
        let path: Vec<String> = path.split(',').map(str::to_string).collect();
        truth = conjunction(&truth, &answer(&parse_query(&trained, head, &path)?)?)?;
    }
    let z: f32 = truth.iter().sum::<f32>().max(f32::MIN_POSITIVE);
    let mut order: Vec<usize> = (0..truth.len()).collect();
    order.sort_by(|&x, &y| truth[y].total_cmp(&truth[x]));
    for (rank, &e) in order.iter().take(a.top).enumerate() {
        println!("{:>3}  {:.4}  {}", rank + 1, truth[e] / z, trained.entities.name(e));
    }
    Ok(())
}
