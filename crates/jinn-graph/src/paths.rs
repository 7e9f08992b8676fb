//! Multi-hop questions `(h, r1, r2, …, ?)` and conjunctions of two of them.
//!
//! * [`compose_scores`]: apply the relation gates one after another to `h`'s amplitudes,
//!   `q = h∘r1∘r2∘…`, and score every entity against `q` — no intermediate entity is visited.
//! * [`beam_scores`] (CQD-style, Arakelyan et al. 2021): hop by hop, turn the link
//!   predictor's scores into truth values `p(t | x, r) = softmax_t score(x, r, t)`, combine
//!   them along a path with the product t-norm, keep the `beam` best intermediate entities
//!   and take the maximum over intermediates (the existential). The result is the truth value
//!   of "∃ x1, …: r1(h, x1) ∧ r2(x1, x2) ∧ … ∧ rk(x_{k−1}, t)" for every `t`.
//! * [`conjunction`]: two paths ending in the same entity, by the product t-norm of their
//!   truth values.
//!
//! [`two_hop_queries`] builds held-out 2-hop questions from a graph for evaluation.

use crate::error::{GraphError, Result};
use crate::model::{ids, GraphModel};
use crate::triples::{KnowledgeGraph, Triple};
use burn::tensor::activation::softmax;
use jinn_data::rng::rng_for;
use rand::seq::SliceRandom;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A path question: start entity and relations in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathQuery {
    /// Start entity id.
    pub head: usize,
    /// Relation ids, applied left to right (reciprocals allowed).
    pub relations: Vec<usize>,
}

fn check(model: &GraphModel, q: &PathQuery) -> Result<()> {
    if q.relations.is_empty() {
        return Err(GraphError::config("path", "needs at least one relation"));
    }
    if q.head >= model.num_entities() {
        return Err(GraphError::config("head", format!("entity id {} ≥ {}", q.head, model.num_entities())));
    }
    if let Some(r) = q.relations.iter().find(|&&r| r >= model.num_relations()) {
        return Err(GraphError::config("path", format!("relation id {r} ≥ {}", model.num_relations())));
    }
    Ok(())
}

/// Scores `[E]` of every entity as the answer of `q`, by composing the relation gates.
pub fn compose_scores(model: &GraphModel, q: &PathQuery) -> Result<Vec<f32>> {
    check(model, q)?;
    let device = model.device();
    let mut x = model.entities(ids(&[q.head], &device)); // [1, d]
    for &r in &q.relations {
        x = model.apply(x, ids(&[r], &device));
    }
    Ok(model.score_all(x).into_data().try_to_vec::<f32>().expect("f32 scores"))
}

/// Truth values `p(t | x, r)` `[n, E]` (row-major) for sources `xs` and one relation.
fn hop_probabilities(model: &GraphModel, xs: &[usize], r: usize) -> Vec<f32> {
    let device = model.device();
    let scores = model.score_all(model.query(ids(xs, &device), ids(&vec![r; xs.len()], &device))); // [n, E]
    softmax(scores, 1).into_data().try_to_vec::<f32>().expect("f32 probabilities")
}

/// Truth values `[E]` in `[0, 1]` of every entity as the answer of `q`, by beam search over
/// intermediate entities with the product t-norm (see the module docs). `beam ≥ 1`.
pub fn beam_scores(model: &GraphModel, q: &PathQuery, beam: usize) -> Result<Vec<f32>> {
    check(model, q)?;
    if beam == 0 {
        return Err(GraphError::config("beam", "must be ≥ 1"));
    }
    let e = model.num_entities();
    let mut frontier: Vec<(usize, f32)> = vec![(q.head, 1.0)];
    let mut truth = vec![0f32; e];
    for (hop, &r) in q.relations.iter().enumerate() {
        let xs: Vec<usize> = frontier.iter().map(|f| f.0).collect();
        let p = hop_probabilities(model, &xs, r); // [n, E]
        truth = vec![0f32; e];
        for (i, &(_, tv)) in frontier.iter().enumerate() {
            for (t, out) in truth.iter_mut().enumerate() {
                *out = out.max(tv * p[i * e + t]);
            }
        }
        if hop + 1 < q.relations.len() {
            let mut order: Vec<usize> = (0..e).collect();
            order.sort_by(|&a, &b| truth[b].total_cmp(&truth[a]).then(a.cmp(&b)));
            frontier = order.into_iter().take(beam).map(|x| (x, truth[x])).collect();
        }
    }
    Ok(truth)
}

/// Product t-norm of two truth-value vectors (a conjunction of two questions).
pub fn conjunction(a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
    if a.len() != b.len() {
        return Err(GraphError::config("conjunction", format!("{} vs {} entities", a.len(), b.len())));
    }
    Ok(a.iter().zip(b).map(|(x, y)| x * y).collect())
}

/// Softmax of raw scores: an answer distribution over entities.
pub fn distribution(scores: &[f32]) -> Vec<f32> {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f64> = scores.iter().map(|&s| ((s - max) as f64).exp()).collect();
    let z: f64 = exp.iter().sum();
    exp.iter().map(|&x| (x / z) as f32).collect()
}

/// Answers of 2-hop questions: `(a, r1, r2)` answered by every `c` with `(a, r1, b)` and
/// `(b, r2, c)` in the graph.
type Adjacency = HashMap<(usize, usize), Vec<usize>>;

fn adjacency<'a>(triples: impl IntoIterator<Item = &'a Triple>) -> Adjacency {
    let mut adj: Adjacency = HashMap::new();
    for t in triples {
        adj.entry((t.head, t.relation)).or_default().push(t.tail);
    }
    adj
}

fn two_hop(adj: &Adjacency, a: usize, r1: usize, r2: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for &b in adj.get(&(a, r1)).map_or(&[][..], Vec::as_slice) {
        out.extend(adj.get(&(b, r2)).map_or(&[][..], Vec::as_slice).iter().copied());
    }
    out
}

/// A held-out 2-hop question with its answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOutQuery {
    /// The question.
    pub query: PathQuery,
    /// Every answer in the full graph (train ∪ valid ∪ test), sorted.
    pub answers: Vec<usize>,
    /// Answers that need at least one test edge (not reachable in train ∪ valid), sorted.
    pub hard: Vec<usize>,
}

/// Up to `max` 2-hop questions (named relations only) with at least one hard answer, the
/// protocol of BetaE/CQD: a hard answer needs a held-out test edge. Chosen deterministically
/// from `seed`.
pub fn two_hop_queries(graph: &KnowledgeGraph, max: usize, seed: u64) -> Vec<HeldOutQuery> {
    let known = adjacency(graph.train.iter().chain(&graph.valid));
    let full = adjacency(graph.all());
    // Candidate questions: a test edge as first hop, or as second hop.
    let mut candidates: BTreeSet<(usize, usize, usize)> = BTreeSet::new();
    let by_tail: BTreeMap<usize, Vec<&Triple>> = graph.all().fold(BTreeMap::new(), |mut m, t| {
        m.entry(t.tail).or_insert_with(Vec::new).push(t);
        m
    });
    for t in &graph.test {
        for r2 in full.keys().filter(|k| k.0 == t.tail).map(|k| k.1) {
            candidates.insert((t.head, t.relation, r2));
        }
        for first in by_tail.get(&t.head).into_iter().flatten() {
            candidates.insert((first.head, first.relation, t.relation));
        }
    }
    let mut queries: Vec<HeldOutQuery> = candidates
        .into_iter()
        .filter_map(|(a, r1, r2)| {
            let all = two_hop(&full, a, r1, r2);
            let easy = two_hop(&known, a, r1, r2);
            let hard: Vec<usize> = all.difference(&easy).copied().collect();
            (!hard.is_empty()).then(|| HeldOutQuery {
                query: PathQuery { head: a, relations: vec![r1, r2] },
                answers: all.into_iter().collect(),
                hard,
            })
        })
        .collect();
    queries.shuffle(&mut rng_for(seed, "two-hop-queries", 0));
    queries.truncate(max);
    queries
}

/// Symbolic baseline: score of `c` = number of paths `a -r1-> b -r2-> c` in the known
/// (train ∪ valid) graph.
pub fn path_count_scores(graph: &KnowledgeGraph, q: &PathQuery) -> Vec<f32> {
    let known = adjacency(graph.train.iter().chain(&graph.valid));
    let mut scores = vec![0f32; graph.num_entities()];
    let mut frontier = vec![(q.head, 1f32)];
    for &r in &q.relations {
        let mut next: BTreeMap<usize, f32> = BTreeMap::new();
        for (x, w) in frontier {
            for &y in known.get(&(x, r)).map_or(&[][..], Vec::as_slice) {
                *next.entry(y).or_default() += w;
            }
        }
        frontier = next.into_iter().collect();
    }
    for (c, w) in frontier {
        scores[c] = w;
    }
    scores
}

/// Filtered metrics of held-out questions: each hard answer is ranked under `scorer`'s
/// scores with the question's other answers filtered out.
pub fn held_out_metrics(
    queries: &[HeldOutQuery],
    mut scorer: impl FnMut(&PathQuery) -> Result<Vec<f32>>,
) -> Result<crate::eval::RankMetrics> {
    let mut ranks = Vec::new();
    for q in queries {
        let scores = scorer(&q.query)?;
        ranks.extend(q.hard.iter().map(|&c| crate::eval::filtered_rank(&scores, c, &q.answers)));
    }
    Ok(crate::eval::RankMetrics::from_ranks(&ranks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::filtered_rank;
    use crate::model::{GraphModelConfig, RelationKind};
    use burn::tensor::Device;

    fn t(head: usize, relation: usize, tail: usize) -> Triple {
        Triple { head, relation, tail }
    }

    #[test]
    fn compose_equals_sequential_query_and_beam_with_full_width_is_exact_max_product() {
        let cfg = GraphModelConfig { kind: RelationKind::Complex, dim: 4, init_scale: 0.8 };
        let m = cfg.init(5, 4, 3, &Device::flex()).unwrap();
        let q = PathQuery { head: 1, relations: vec![2, 0] };
        // Composition: the same as scoring the query of (h∘r1) then applying r2 by hand.
        let dev = m.device();
        let x = m.apply(m.query(ids(&[1], &dev), ids(&[2], &dev)), ids(&[0], &dev));
        let want: Vec<f32> = m.score_all(x).into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(compose_scores(&m, &q).unwrap(), want);
        // Beam over all 5 entities: max_b p(b|1,r2)·p(c|b,r0), by brute force.
        let p1 = hop_probabilities(&m, &[1], 2);
        let got = beam_scores(&m, &q, 5).unwrap();
        for (c, &g) in got.iter().enumerate() {
            let want = (0..5).map(|b| p1[b] * hop_probabilities(&m, &[b], 0)[c]).fold(0f32, f32::max);
            assert!((g - want).abs() < 1e-7, "{c}: {g} vs {want}");
        }
        // Beam 1 follows only the best first hop.
        let best = (0..5).max_by(|&a, &b| p1[a].total_cmp(&p1[b])).unwrap();
        let p2 = hop_probabilities(&m, &[best], 0);
        let narrow = beam_scores(&m, &q, 1).unwrap();
        assert!((0..5).all(|c| (narrow[c] - p1[best] * p2[c]).abs() < 1e-7));
        assert_eq!(conjunction(&[0.5, 1.0], &[0.5, 0.25]).unwrap(), vec![0.25, 0.25]);
        assert!(beam_scores(&m, &PathQuery { head: 9, relations: vec![0] }, 2).is_err());
        assert!(compose_scores(&m, &PathQuery { head: 0, relations: vec![] }).is_err());
        let d = distribution(&[0.0, (2f32).ln()]);
        assert!((d[0] - 1.0 / 3.0).abs() < 1e-6 && (d[1] - 2.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn two_hop_queries_have_exact_hard_answers() {
        // 0 -r0-> 1 -r1-> 2 (train), 1 -r1-> 3 (test), 4 -r0-> 1 (test).
        let g = KnowledgeGraph {
            train: vec![t(0, 0, 1), t(1, 1, 2)],
            valid: vec![],
            test: vec![t(1, 1, 3), t(4, 0, 1)],
            ..Default::default()
        };
        let mut qs = two_hop_queries(&g, 10, 0);
        qs.sort_by(|a, b| a.query.cmp(&b.query));
        let want = vec![
            HeldOutQuery {
                query: PathQuery { head: 0, relations: vec![0, 1] },
                answers: vec![2, 3],
                hard: vec![3],
            },
            HeldOutQuery {
                query: PathQuery { head: 4, relations: vec![0, 1] },
                answers: vec![2, 3],
                hard: vec![2, 3],
            },
        ];
        assert_eq!(qs, want);
        let mut g2 = g.clone();
        g2.entities =
            crate::triples::Vocab::from_names("entity", (0..5).map(|i| i.to_string()).collect()).unwrap();
        let s = path_count_scores(&g2, &want[0].query);
        assert_eq!(s, vec![0.0, 0.0, 1.0, 0.0, 0.0]);
        assert_eq!(filtered_rank(&s, 3, &want[0].answers), 1.0 + 1.5);
    }
}
