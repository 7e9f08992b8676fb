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
    train_counted_merges(units, first_id, max_merges).into_iter().map(|(p, _)| p).collect()
}

/// [`train_merges`] with the weighted count each merge had when it was made.
pub fn train_counted_merges(
    units: Vec<(Vec<u32>, u64)>,
    first_id: u32,
    max_merges: usize,
) -> Vec<(Pair, u64)> {
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
    let mut merges: Vec<(Pair, u64)> = Vec::new();
    while merges.len() < max_merges {
        let Some((count, Reverse(pair))) = heap.pop() else { break };
        if counts.get(&pair).copied().unwrap_or(0) != count || count == 0 {
            continue; // stale heap entry
        }
        let new = first_id + merges.len() as u32;
        merges.push((pair, count));
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

/// Intermediate-token removal (in the spirit of PickyBPE, Chizhov et al. 2024, with the
/// unigram-LM tokenizer's pruning by use): which of the `merges` (made by BPE over `units`,
/// merge `k` creating id `first_id + k`, bytes `b` being ids `first_id − 256 + b`) become the at
/// most `budget` vocabulary tokens.
///
/// BPE leaves scaffolding in its vocabulary: tokens that helped build longer ones but that later
/// merges almost always consume, so they are rarely used when units are encoded. Here all
/// `merges` are candidates; the training units are encoded by [`FewestTokens`] over the
/// candidates still kept, each token's uses are counted (weighted like the units), and the
/// least-used quarter of the excess over `budget` is dropped (ties: the later merge first), until
/// `budget` remain. Returns a keep flag per merge. Bytes are always tokens, so every unit stays
/// encodable; the result is deterministic. With `merges.len() ≤ budget` every merge is kept.
/// `space_cut`: count uses under [`FewestTokens::with_space_cut`], the encoding to be used.
pub fn select_tokens(
    units: &[(Vec<u8>, u64)],
    merges: &[Pair],
    first_id: u32,
    budget: usize,
    space_cut: bool,
) -> Vec<bool> {
    let byte0 = first_id - 256;
    let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for &(l, r) in merges {
        let mut t = bytes[(l - byte0) as usize].clone();
        t.extend_from_slice(&bytes[(r - byte0) as usize]);
        bytes.push(t);
    }
    let mut keep = vec![true; merges.len()];
    let mut kept: Vec<usize> = (0..merges.len()).collect();
    let mut out = Vec::new();
    while kept.len() > budget {
        // Local ids: bytes 0..256, then the kept merges in rank order.
        let tokens: Vec<Vec<u8>> =
            bytes[..256].iter().cloned().chain(kept.iter().map(|&k| bytes[256 + k].clone())).collect();
        let mut enc = FewestTokens::new(&tokens, 0);
        if space_cut {
            enc = enc.with_space_cut();
        }
        let mut uses = vec![0u64; merges.len()];
        for (unit, w) in units {
            out.clear();
            enc.encode(unit, &mut out);
            for &id in out.iter().filter(|&&id| id >= 256) {
                uses[kept[id as usize - 256]] += w;
            }
        }
        let drop = (kept.len() - budget).div_ceil(4);
        let mut order = kept.clone();
        order.sort_by_key(|&k| (uses[k], std::cmp::Reverse(k)));
        for &k in &order[..drop] {
            keep[k] = false;
        }
        kept.retain(|&k| keep[k]);
    }
    keep
}

/// One merge of a trained tokenizer: the pair it joins and the id of the token it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merge {
    /// The joined ids (left, right).
    pub pair: Pair,
    /// The new token's id.
    pub id: u32,
}

/// Merges ready for encoding: pair → (rank, new id).
#[derive(Clone, Debug, Default)]
pub struct MergeTable {
    ranks: HashMap<Pair, (u32, u32)>,
}

impl MergeTable {
    /// Build from merges in rank order.
    pub fn new(merges: &[Merge]) -> MergeTable {
        let ranks = merges.iter().enumerate().map(|(k, m)| (m.pair, (k as u32, m.id))).collect();
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

/// Encoding by the fewest tokens: a byte trie over the token strings, and a shortest-path search
/// over a unit's byte positions. Ties go to the smallest sum of ids (earlier merges are more
/// frequent), then to the longest last token.
#[derive(Clone, Debug, Default)]
pub struct FewestTokens {
    /// Node 0 is the root; each node's children are sorted by byte.
    nodes: Vec<TrieNode>,
    /// Prefer, among spellings with the fewest tokens, one cut right after a leading space.
    space_cut: bool,
}

#[derive(Clone, Debug, Default)]
struct TrieNode {
    children: Vec<(u8, u32)>,
    id: Option<u32>,
}

impl FewestTokens {
    /// Index `tokens`, where `tokens[k]` (non-empty) has id `first_id + k`.
    pub fn new(tokens: &[Vec<u8>], first_id: u32) -> FewestTokens {
        let mut nodes = vec![TrieNode::default()];
        for (k, t) in tokens.iter().enumerate() {
            let mut at = 0usize;
            for &b in t {
                at = match nodes[at].children.binary_search_by_key(&b, |&(c, _)| c) {
                    Ok(i) => nodes[at].children[i].1 as usize,
                    Err(i) => {
                        let new = nodes.len();
                        nodes[at].children.insert(i, (b, new as u32));
                        nodes.push(TrieNode::default());
                        new
                    }
                };
            }
            nodes[at].id = Some(first_id + k as u32);
        }
        FewestTokens { nodes, space_cut: false }
    }

    /// The same search, but among spellings with the fewest tokens one with a cut right after
    /// the unit's leading space (a unit that starts with `' '` then a byte that is not ASCII
    /// whitespace: a word's first morph) wins before the id sum decides, so a word spelled as
    /// `" "` + one whole-morph token beats `" bo" + "ard"`.
    pub fn with_space_cut(mut self) -> FewestTokens {
        self.space_cut = true;
        self
    }

    /// Append the ids of the fewest tokens spelling `unit` to `out` (every byte must be a token).
    pub fn encode(&self, unit: &[u8], out: &mut Vec<u32>) {
        let n = unit.len();
        // Where a cut is free of the "no space cut" penalty (0: none).
        let free_cut =
            usize::from(self.space_cut && n > 1 && unit[0] == b' ' && !unit[1].is_ascii_whitespace());
        // best[j]: (tokens, cuts other than the free one, id sum) of the cheapest spelling of
        // unit[..j]; back[j]: (start, id).
        let mut best = vec![(u32::MAX, u32::MAX, u64::MAX); n + 1];
        let mut back = vec![(0usize, 0u32); n + 1];
        best[0] = (0, 0, 0);
        for i in 0..n {
            let (count, cuts, sum) = best[i];
            if count == u32::MAX {
                continue;
            }
            let cuts = cuts + u32::from(i > 0 && i != free_cut);
            let mut at = 0usize;
            for (d, &b) in unit[i..].iter().enumerate() {
                let node = &self.nodes[at];
                let Ok(c) = node.children.binary_search_by_key(&b, |&(c, _)| c) else { break };
                at = node.children[c].1 as usize;
                if let Some(id) = self.nodes[at].id {
                    let j = i + d + 1;
                    let candidate = (count + 1, cuts, sum + id as u64);
                    if candidate < best[j] {
                        best[j] = candidate;
                        back[j] = (i, id);
                    }
                }
            }
        }
        let start = out.len();
        let mut j = n;
        while j > 0 {
            let (i, id) = back[j];
            out.push(id);
            j = i;
        }
        out[start..].reverse();
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
        let steps: Vec<Merge> =
            merges.iter().enumerate().map(|(k, &pair)| Merge { pair, id: 10 + k as u32 }).collect();
        let table = MergeTable::new(&steps);
        assert_eq!(table.apply(vec![0, 1, 2]), [12]);
        assert_eq!(table.apply(vec![2, 3, 0, 1]), [11, 10]);
        assert_eq!(table.apply(vec![1, 0]), [1, 0]);
    }

    /// Every way to cut `unit` into tokens of `vocab` (reference for the shortest-path search).
    fn all_spellings(unit: &[u8], vocab: &[Vec<u8>]) -> Vec<Vec<u32>> {
        if unit.is_empty() {
            return vec![Vec::new()];
        }
        let mut out = Vec::new();
        for (k, t) in vocab.iter().enumerate() {
            if unit.starts_with(t) {
                for mut rest in all_spellings(&unit[t.len()..], vocab) {
                    rest.insert(0, k as u32);
                    out.push(rest);
                }
            }
        }
        out
    }

    #[test]
    fn fewest_tokens_matches_exhaustive_search() {
        // Bytes 0..4 are ids 0..4; merges: "ab" 4, "bc" 5, "abc" 6, "cd" 7, "bcd" 8, "da" 9.
        let mut vocab: Vec<Vec<u8>> = (0..4u8).map(|b| vec![b]).collect();
        for t in [&[0u8, 1][..], &[1, 2], &[0, 1, 2], &[2, 3], &[1, 2, 3], &[3, 0]] {
            vocab.push(t.to_vec());
        }
        let enc = FewestTokens::new(&vocab, 0);
        let mut state = 7u64;
        for len in 0..9 {
            for _ in 0..30 {
                let unit: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (state >> 33) as u8 % 4
                    })
                    .collect();
                let mut got = Vec::new();
                enc.encode(&unit, &mut got);
                let best = all_spellings(&unit, &vocab)
                    .into_iter()
                    .map(|s| (s.len(), s.iter().map(|&i| i as u64).sum::<u64>()))
                    .min()
                    .unwrap();
                assert_eq!((got.len(), got.iter().map(|&i| i as u64).sum::<u64>()), best, "{unit:?}");
                let bytes: Vec<u8> = got.iter().flat_map(|&i| vocab[i as usize].clone()).collect();
                assert_eq!(bytes, unit);
            }
        }
        // Greedy merges may not be shortest: "abcd" → merges give ab|cd (2); so does the search.
        let mut got = Vec::new();
        enc.encode(&[0, 1, 2, 3, 0], &mut got);
        assert_eq!(got.len(), 2); // abc|da (sum 15) beats ab|c|da, a|bcd|a…
        assert_eq!(got, [6, 9]);
    }

    #[test]
    fn least_used_tokens_are_removed_first() {
        // Units "abcd" ×10 and "ab" ×1 (bytes a..d = ids 0..3, merges from id 256): BPE makes
        // ab (count 11), then cd (10, tied with ab+c but the smaller pair), then abcd (10).
        // Encoded with all three, cd is never used, ab once, abcd 10 times: budget 2 drops cd;
        // budget 1 drops cd, then ab.
        let units: Vec<(Vec<u8>, u64)> = vec![(vec![0, 1, 2, 3], 10), (vec![0, 1], 1)];
        let symbols = units.iter().map(|(u, c)| (u.iter().map(|&b| b as u32).collect(), *c)).collect();
        let merges = train_merges(symbols, 256, 10);
        assert_eq!(merges, [(0, 1), (2, 3), (256, 257)]);
        assert_eq!(select_tokens(&units, &merges, 256, 3, false), [true, true, true]);
        assert_eq!(select_tokens(&units, &merges, 256, 2, false), [true, false, true]);
        assert_eq!(select_tokens(&units, &merges, 256, 1, false), [false, false, true]);
        assert_eq!(select_tokens(&units, &merges, 256, 0, false), [false, false, false]);
    }

    #[test]
    fn space_cut_breaks_ties_between_equally_short_spellings() {
        // Ids: b 0, o 1, a 2, r 3, d 4, " bo" 5, "ard" 6, "board" 7, ' ' 8.
        let vocab: Vec<Vec<u8>> = [&b"b"[..], b"o", b"a", b"r", b"d", b" bo", b"ard", b"board", b" "]
            .iter()
            .map(|t| t.to_vec())
            .collect();
        let plain = FewestTokens::new(&vocab, 0);
        let spaced = plain.clone().with_space_cut();
        let enc = |e: &FewestTokens, u: &[u8]| {
            let mut out = Vec::new();
            e.encode(u, &mut out);
            out
        };
        // Two tokens either way: the id sum picks " bo"|"ard" (11 < 15), the space cut " "|"board".
        assert_eq!(enc(&plain, b" board"), [5, 6]);
        assert_eq!(enc(&spaced, b" board"), [8, 7]);
        // Fewer tokens still win, and units without a leading space are unaffected.
        assert_eq!(enc(&spaced, b"board"), [7]);
        assert_eq!(enc(&spaced, b" boar"), [5, 2, 3]);
        assert_eq!(enc(&spaced, b"  board"), enc(&plain, b"  board"));
    }

    #[test]
    fn overlapping_pairs_merge_left_to_right() {
        assert_eq!(merge_in(&[5, 5, 5], (5, 5), 9), [9, 5]);
        assert_eq!(merge_in(&[5, 5, 5, 5], (5, 5), 9), [9, 9]);
    }
}
