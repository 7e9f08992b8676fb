//! Byte-pair encoding over units (morphs and non-word pieces): merges only ever join symbols
//! inside one unit, so no merge can cross a unit (morph) boundary.
//!
//! Training repeatedly merges the adjacent pair with the highest weighted count; ties go to the
//! pair with the smallest `(left id, right id)`. A merge replaces the pair's occurrences left
//! to right without overlap. Encoding applies the merges in rank order the same way, so a
//! training unit encodes to exactly its final training symbols.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// A symbol pair.
pub type Pair = (u32, u32);

/// Replace non-overlapping occurrences of `pair` in `seq`, left to right, with `new`.
fn merge_in(seq: &[u32], pair: Pair, new: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(seq.len());
    let mut i = 0;
    while i < seq.len() {
        if i + 1 < seq.len() && (seq[i], seq[i + 1]) == pair {
            out.push(new);
            i += 2;
        } else {
            out.push(seq[i]);
            i += 1;
        }
    }
    out
}

/// Learn up to `max_merges` merges over weighted units; merge `k` creates id `first_id + k`.
/// Stops early when no pair occurs any more.
pub fn train_merges(units: Vec<(Vec<u32>, u64)>, first_id: u32, max_merges: usize) -> Vec<Pair> {
    let (mut seqs, weights): (Vec<Vec<u32>>, Vec<u64>) = units.into_iter().unzip();
    let mut counts: HashMap<Pair, u64> = HashMap::new();
    let mut where_: HashMap<Pair, Vec<usize>> = HashMap::new();
    for (u, seq) in seqs.iter().enumerate() {
        for w in seq.windows(2) {
            *counts.entry((w[0], w[1])).or_default() += weights[u];
            where_.entry((w[0], w[1])).or_default().push(u);
        }
    }
    let mut heap: BinaryHeap<(u64, Reverse<Pair>)> = counts.iter().map(|(&p, &c)| (c, Reverse(p))).collect();
    let mut merges = Vec::new();
    while merges.len() < max_merges {
        let Some((count, Reverse(pair))) = heap.pop() else { break };
        if counts.get(&pair).copied().unwrap_or(0) != count || count == 0 {
            continue; // stale heap entry
        }
        let new = first_id + merges.len() as u32;
        merges.push(pair);
        let mut users = where_.remove(&pair).unwrap_or_default();
        users.sort_unstable();
        users.dedup();
        let mut touched: Vec<Pair> = Vec::new();
        for u in users {
            let seq = &seqs[u];
            if !seq.windows(2).any(|w| (w[0], w[1]) == pair) {
                continue;
            }
            let w = weights[u];
            for p in seq.windows(2) {
                let key = (p[0], p[1]);
                *counts.get_mut(&key).expect("counted") -= w;
                touched.push(key);
            }
            let merged = merge_in(seq, pair, new);
            for p in merged.windows(2) {
                let key = (p[0], p[1]);
                *counts.entry(key).or_default() += w;
                where_.entry(key).or_default().push(u);
                touched.push(key);
            }
            seqs[u] = merged;
        }
        touched.sort_unstable();
        touched.dedup();
        for p in touched {
            let c = counts[&p];
            if c > 0 {
                heap.push((c, Reverse(p)));
            }
        }
    }
    merges
}

/// Merges ready for encoding: pair → (rank, new id).
#[derive(Clone, Debug, Default)]
pub struct MergeTable {
    ranks: HashMap<Pair, (u32, u32)>,
}

impl MergeTable {
    /// Build from merges in rank order; merge `k` creates id `first_id + k`.
    pub fn new(merges: &[Pair], first_id: u32) -> MergeTable {
        let ranks = merges.iter().enumerate().map(|(k, &p)| (p, (k as u32, first_id + k as u32))).collect();
        MergeTable { ranks }
    }

    /// Apply the merges to `seq` (symbol ids of one unit) in rank order.
    pub fn apply(&self, mut seq: Vec<u32>) -> Vec<u32> {
        while seq.len() > 1 {
            let best = seq
                .windows(2)
                .filter_map(|w| self.ranks.get(&(w[0], w[1])).map(|&(r, id)| (r, (w[0], w[1]), id)))
                .min();
            let Some((_, pair, new)) = best else { break };
            seq = merge_in(&seq, pair, new);
        }
        seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_follow_counts_then_smallest_pair() {
        // "ab" ×3, "cd" ×3 (tie → (a,b) first since a < c), "abc" ×1.
        let units = vec![(vec![0, 1], 3), (vec![2, 3], 3), (vec![0, 1, 2], 1)];
        let merges = train_merges(units, 10, 10);
        assert_eq!(merges[0], (0, 1));
        assert_eq!(merges[1], (2, 3));
        assert_eq!(merges[2], (10, 2));
        assert_eq!(merges.len(), 3);
        let table = MergeTable::new(&merges, 10);
        assert_eq!(table.apply(vec![0, 1, 2]), [12]);
        assert_eq!(table.apply(vec![2, 3, 0, 1]), [11, 10]);
        assert_eq!(table.apply(vec![1, 0]), [1, 0]);
    }

    #[test]
    fn overlapping_pairs_merge_left_to_right() {
        assert_eq!(merge_in(&[5, 5, 5], (5, 5), 9), [9, 5]);
        assert_eq!(merge_in(&[5, 5, 5, 5], (5, 5), 9), [9, 9]);
    }
}
