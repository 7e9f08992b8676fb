//! Filtered link-prediction metrics: MRR and Hits@1/3/10.
//!
//! Each test triple `(h, r, t)` gives two queries: tail `(h, r, ?) → t` and head, asked as
//! `(t, r⁻¹, ?) → h` on the reciprocal relation. **Filtering:** every other entity that
//! completes the query to a triple of *any* split is removed from the candidates (the
//! standard "filtered" setting of Bordes et al. 2013). **Ties:** the rank of the answer is
//! `1 + #(candidates scoring higher) + #(other candidates scoring equally)/2`, the mean of
//! the optimistic and pessimistic ranks (PyKEEN's "realistic" rank), so a constant scorer
//! gets the expected rank of a random order rather than rank 1. Hits@k counts `rank ≤ k`.
//! A NaN score for the answer ranks it last.

use crate::model::{ids, GraphModel};
use crate::triples::{KnowledgeGraph, Triple};
use std::collections::HashMap;

/// Known answers of every `(head, relation)` query over a set of triples, reciprocals included.
#[derive(Debug, Clone, Default)]
pub struct FilterIndex {
    known: HashMap<(usize, usize), Vec<usize>>,
}

impl FilterIndex {
    /// Index `triples` and their reciprocals (relation `r + num_relations`).
    pub fn new<'a>(triples: impl IntoIterator<Item = &'a Triple>, num_relations: usize) -> FilterIndex {
        let mut known: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for t in triples {
            known.entry((t.head, t.relation)).or_default().push(t.tail);
            known.entry((t.tail, t.relation + num_relations)).or_default().push(t.head);
        }
        for v in known.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        FilterIndex { known }
    }

    /// Index every split of `graph`.
    pub fn for_graph(graph: &KnowledgeGraph) -> FilterIndex {
        FilterIndex::new(graph.all(), graph.num_relations())
    }

    /// Known answers of `(head, relation, ?)` (sorted).
    pub fn answers(&self, head: usize, relation: usize) -> &[usize] {
        self.known.get(&(head, relation)).map_or(&[], Vec::as_slice)
    }
}

/// Filtered rank of `target` under `scores` (one per entity), ignoring the entities in
/// `known` other than `target` (see the module docs for ties and NaN).
pub fn filtered_rank(scores: &[f32], target: usize, known: &[usize]) -> f64 {
    let s = scores[target];
    if s.is_nan() {
        return scores.len() as f64;
    }
    let (mut higher, mut equal) = (0usize, 0usize);
    for (j, &v) in scores.iter().enumerate() {
        if j == target || known.binary_search(&j).is_ok() {
            continue;
        }
        if v > s || v.is_nan() {
            higher += 1;
        } else if v == s {
            equal += 1;
        }
    }
    1.0 + higher as f64 + equal as f64 / 2.0
}

/// Ranking metrics over a set of queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankMetrics {
    /// Mean reciprocal rank.
    pub mrr: f64,
    /// Fraction of ranks ≤ 1.
    pub hits1: f64,
    /// Fraction of ranks ≤ 3.
    pub hits3: f64,
    /// Fraction of ranks ≤ 10.
    pub hits10: f64,
    /// Number of ranked queries.
    pub count: usize,
}

impl RankMetrics {
    /// Metrics of the given ranks.
    pub fn from_ranks(ranks: &[f64]) -> RankMetrics {
        let n = ranks.len().max(1) as f64;
        let frac = |k: f64| ranks.iter().filter(|&&r| r <= k).count() as f64 / n;
        RankMetrics {
            mrr: ranks.iter().map(|r| 1.0 / r).sum::<f64>() / n,
            hits1: frac(1.0),
            hits3: frac(3.0),
            hits10: frac(10.0),
            count: ranks.len(),
        }
    }

    /// As `(name, value)` pairs with the given prefix (`mrr`, `hits@1`, …).
    pub fn named(&self, prefix: &str) -> Vec<(String, f64)> {
        vec![
            (format!("{prefix}mrr"), self.mrr),
            (format!("{prefix}hits@1"), self.hits1),
            (format!("{prefix}hits@3"), self.hits3),
            (format!("{prefix}hits@10"), self.hits10),
        ]
    }
}

/// Filtered ranks of both directions of every triple in `triples`, scored `batch` queries at
/// a time with `model` (use a model without autodiff).
pub fn rank_triples(
    model: &GraphModel,
    triples: &[Triple],
    filter: &FilterIndex,
    num_relations: usize,
    batch: usize,
) -> Vec<f64> {
    let queries: Vec<(usize, usize, usize)> = triples
        .iter()
        .flat_map(|t| [(t.head, t.relation, t.tail), (t.tail, t.relation + num_relations, t.head)])
        .collect();
    let device = model.device();
    let e = model.num_entities();
    let mut ranks = Vec::with_capacity(queries.len());
    for chunk in queries.chunks(batch.max(1)) {
        let heads: Vec<usize> = chunk.iter().map(|q| q.0).collect();
        let rels: Vec<usize> = chunk.iter().map(|q| q.1).collect();
        let scores: Vec<f32> = model
            .score_all(model.query(ids(&heads, &device), ids(&rels, &device)))
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32 scores"); // [n, E]
        for (i, &(h, r, t)) in chunk.iter().enumerate() {
            ranks.push(filtered_rank(&scores[i * e..(i + 1) * e], t, filter.answers(h, r)));
        }
    }
    ranks
}

/// Filtered metrics of `triples` (see [`rank_triples`]).
pub fn evaluate(
    model: &GraphModel,
    triples: &[Triple],
    filter: &FilterIndex,
    num_relations: usize,
    batch: usize,
) -> RankMetrics {
    RankMetrics::from_ranks(&rank_triples(model, triples, filter, num_relations, batch))
}

/// Baseline ranks of both directions of `triples` by how often each entity is the answer of
/// the query's relation in `train` (reciprocals included), ignoring the query's entity.
pub fn frequency_ranks(
    train: &[Triple],
    triples: &[Triple],
    filter: &FilterIndex,
    num_entities: usize,
    num_relations: usize,
) -> Vec<f64> {
    let mut counts = vec![vec![0f32; num_entities]; 2 * num_relations];
    for t in crate::triples::with_reciprocals(train, num_relations) {
        counts[t.relation][t.tail] += 1.0;
    }
    triples
        .iter()
        .flat_map(|t| [(t.head, t.relation, t.tail), (t.tail, t.relation + num_relations, t.head)])
        .map(|(h, r, t)| filtered_rank(&counts[r], t, filter.answers(h, r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_count_half_and_filtered_answers_are_skipped() {
        // Entity 2 is the answer; 0 and 4 score higher, but 4 is another known answer.
        let scores = [5.0, 1.0, 3.0, 3.0, 9.0, 3.0];
        assert_eq!(filtered_rank(&scores, 2, &[2, 4]), 1.0 + 1.0 + 2.0 / 2.0);
        assert_eq!(filtered_rank(&scores, 2, &[]), 1.0 + 2.0 + 1.0);
        // A constant scorer: expected rank of a random order, (n + 1) / 2.
        assert_eq!(filtered_rank(&[0.5; 7], 3, &[]), 4.0);
        // NaN answer ranks last; a NaN competitor counts as higher.
        assert_eq!(filtered_rank(&[f32::NAN, 1.0], 0, &[]), 2.0);
        assert_eq!(filtered_rank(&[f32::NAN, 1.0], 1, &[]), 2.0);
        let m = RankMetrics::from_ranks(&[1.0, 2.5, 4.0, 20.0]);
        assert_eq!((m.hits1, m.hits3, m.hits10), (0.25, 0.5, 0.75));
        assert!((m.mrr - (1.0 + 0.4 + 0.25 + 0.05) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn filter_index_holds_both_directions_over_all_splits() {
        let t = |head, relation, tail| Triple { head, relation, tail };
        let f = FilterIndex::new(&[t(0, 0, 1), t(0, 0, 2), t(3, 1, 1), t(0, 0, 1)], 2);
        assert_eq!(f.answers(0, 0), [1, 2]);
        assert_eq!(f.answers(1, 2), [0]);
        assert_eq!(f.answers(1, 3), [3]);
        assert!(f.answers(2, 1).is_empty());
    }
}
