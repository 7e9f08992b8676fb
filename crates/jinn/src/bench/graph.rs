//! `jinn bench graph`: link prediction on Nations and UMLS (filtered test MRR/Hits against a
//! relation-frequency baseline in the same run and the published anchors) and held-out 2-hop
//! path questions on UMLS (composition and beam search against a path-counting baseline).

use crate::device::DeviceArgs;
use crate::graph::train::train;
use anyhow::Context;
use jinn_graph::eval::{evaluate, frequency_ranks, FilterIndex, RankMetrics};
use jinn_graph::paths::{beam_scores, compose_scores, held_out_metrics, path_count_scores, two_hop_queries};
use jinn_graph::{GraphRunConfig, KnowledgeGraph, TrainedGraph};
use std::path::PathBuf;

/// Arguments of `jinn bench graph`.
#[derive(clap::Args)]
pub struct GraphBenchArgs {
    /// Directory holding `nations/` and `umls/`.
    #[arg(long, default_value = "data/kg")]
    pub data: PathBuf,
    /// Directory holding `nations.toml` and `umls.toml`.
    #[arg(long, default_value = "configs/graph")]
    pub configs: PathBuf,
    /// Override a config value of both runs (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Held-out 2-hop questions to sample on UMLS.
    #[arg(long, default_value_t = 500)]
    pub path_queries: usize,
    /// Beam width of the CQD-style search.
    #[arg(long, default_value_t = 16)]
    pub beam: usize,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

fn row(name: &str, m: &RankMetrics) {
    println!(
        "  {name:<34} MRR {:.3}  H@1 {:.3}  H@3 {:.3}  H@10 {:.3}  ({} queries)",
        m.mrr, m.hits1, m.hits3, m.hits10, m.count
    );
}

/// Train on each set, evaluate, print the tables.
pub fn run(a: GraphBenchArgs) -> anyhow::Result<()> {
    let runs = tempfile::tempdir()?;
    let device = a.device.device();
    for set in ["nations", "umls"] {
        let data = a.data.join(set);
        let config = a.configs.join(format!("{set}.toml"));
        let cfg: GraphRunConfig = jinn_train::config::load(Some(&config), &a.overrides)?;
        let out = runs.path().join(set);
        println!("{set}: training {:?} d={} for {} steps …", cfg.model.kind, cfg.model.dim, cfg.train.steps);
        let (_, secs) = train(&cfg, &data, &out, false, None, &device.clone().autodiff())?;
        let trained = TrainedGraph::load(&out, &device)?;
        let graph =
            KnowledgeGraph::load_with_vocab(&data, trained.entities.clone(), trained.relations.clone())
                .with_context(|| format!("reading {}", data.display()))?;
        let filter = FilterIndex::for_graph(&graph);
        let r = graph.num_relations();
        println!("{set}: trained in {secs:.1} s; filtered test metrics (both directions, ties = mean rank):");
        row(
            &format!("{:?} (this run)", trained.model.kind()),
            &evaluate(&trained.model, &graph.test, &filter, r, 512),
        );
        let freq = frequency_ranks(&graph.train, &graph.test, &filter, graph.num_entities(), r);
        row("baseline: relation-tail frequency", &RankMetrics::from_ranks(&freq));
        if set == "umls" {
            println!(
                "  published (reference, not this run): ComplEx-N3 MRR 0.838, DistMult 0.878, ConvE 0.797"
            );
            let queries = two_hop_queries(&graph, a.path_queries, 0);
            println!(
                "umls: {} held-out 2-hop questions (a hard answer needs a test edge), filtered:",
                queries.len()
            );
            row(
                "composed gates h∘r1∘r2",
                &held_out_metrics(&queries, |q| compose_scores(&trained.model, q))?,
            );
            let beam_name = format!("beam search (k={}, product t-norm)", a.beam);
            row(&beam_name, &held_out_metrics(&queries, |q| beam_scores(&trained.model, q, a.beam))?);
            row(
                "baseline: path count in train∪valid",
                &held_out_metrics(&queries, |q| Ok(path_count_scores(&graph, q)))?,
            );
        } else {
            println!("  published: no Nations anchor in the reference (14 entities: a smoke test)");
        }
    }
    Ok(())
}
