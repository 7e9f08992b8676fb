//! Normalised mutual information between two labelings of the same items, for the agreement
//! of LAM codes with a dataset's recorded actions.
//!
//! `I(X; Y) = Σ p(x, y)·ln(p(x, y) / (p(x)·p(y)))` from the joint counts, normalised by the
//! geometric mean `sqrt(H(X)·H(Y))` ([`Normalisation::Geometric`], the default jinn reports)
//! or the arithmetic mean `(H(X) + H(Y)) / 2` ([`Normalisation::Arithmetic`], scikit-learn's
//! default). Conventions as scikit-learn's `normalized_mutual_info_score`: two constant
//! labelings agree perfectly (1); otherwise a zero normaliser gives 0. No chance correction
//! (that would be AMI), so small samples of independent labels score slightly above 0.
//!
//! Hand-written: a few lines of counting; no maintained crate offers just this.

use std::collections::HashMap;

/// How mutual information is normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalisation {
    /// `I / sqrt(H(X)·H(Y))`.
    Geometric,
    /// `I / ((H(X) + H(Y)) / 2)`.
    Arithmetic,
}

/// Error of [`nmi`]: the labelings do not describe the same items.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NmiError {
    /// The two label lists differ in length.
    #[error("label lists differ in length: {0} and {1}")]
    LengthMismatch(usize, usize),
    /// There is nothing to compare.
    #[error("no labels to compare")]
    Empty,
}

/// Pairs each transition's latent code with the action that caused it, appending to `codes` and
/// `truth`: for `clips` clips of `seq_len` frames, `latent` holds the codes of transitions
/// `t → t+1` `[clips, seq_len−1]` and `recorded` the action taken at each frame
/// `[clips ≥ clips, seq_len]` (the one at frame `t` causes transition `t → t+1`).
pub fn pair_transitions(
    latent: &[i64],
    recorded: &[i64],
    clips: usize,
    seq_len: usize,
    codes: &mut Vec<i64>,
    truth: &mut Vec<i64>,
) {
    let t = seq_len;
    for b in 0..clips {
        codes.extend_from_slice(&latent[b * (t - 1)..(b + 1) * (t - 1)]);
        truth.extend_from_slice(&recorded[b * t..b * t + t - 1]);
    }
}

/// Normalised mutual information of labelings `a` and `b` (item `i` has labels `a[i]`,
/// `b[i]`), in `[0, 1]`; invariant to renaming the labels of either side.
pub fn nmi(a: &[i64], b: &[i64], norm: Normalisation) -> Result<f64, NmiError> {
    if a.len() != b.len() {
        return Err(NmiError::LengthMismatch(a.len(), b.len()));
    }
    if a.is_empty() {
        return Err(NmiError::Empty);
    }
    let n = a.len() as f64;
    let mut joint: HashMap<(i64, i64), usize> = HashMap::new();
    let mut count_a: HashMap<i64, usize> = HashMap::new();
    let mut count_b: HashMap<i64, usize> = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *joint.entry((x, y)).or_default() += 1;
        *count_a.entry(x).or_default() += 1;
        *count_b.entry(y).or_default() += 1;
    }
    if count_a.len() == 1 && count_b.len() == 1 {
        return Ok(1.0);
    }
    let entropy = |counts: &HashMap<i64, usize>| -> f64 {
        counts.values().map(|&c| c as f64 / n).map(|p| -p * p.ln()).sum()
    };
    let (ha, hb) = (entropy(&count_a), entropy(&count_b));
    let mi: f64 = joint
        .iter()
        .map(|(&(x, y), &c)| {
            let pxy = c as f64 / n;
            let (px, py) = (count_a[&x] as f64 / n, count_b[&y] as f64 / n);
            pxy * (pxy / (px * py)).ln()
        })
        .sum();
    let denom = match norm {
        Normalisation::Geometric => (ha * hb).sqrt(),
        Normalisation::Arithmetic => (ha + hb) / 2.0,
    };
    if denom <= 0.0 {
        return Ok(0.0);
    }
    // Rounding can push a perfect agreement a hair above 1 or an independent one below 0.
    Ok((mi.max(0.0) / denom).min(1.0))
}

/// Counts of each `(code, action)` pair: row `c`, column `a` holds how many items have
/// `codes[i] == c` and `actions[i] == a`; the table is `(max code + 1) × (max action + 1)`
/// (labels are indices ≥ 0; negative ones are skipped). Shows *which* distinctions the codes
/// make, which the single NMI number hides.
pub fn code_action_counts(codes: &[i64], actions: &[i64]) -> Vec<Vec<usize>> {
    let size = |v: &[i64]| v.iter().copied().max().map_or(0, |m| (m.max(-1) + 1) as usize);
    let mut table = vec![vec![0usize; size(actions)]; size(codes)];
    for (&c, &a) in codes.iter().zip(actions) {
        if c >= 0 && a >= 0 {
            table[c as usize][a as usize] += 1;
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_action_counts_tally_every_pair() {
        let codes = [0, 2, 2, 0, 2, -1];
        let actions = [1, 0, 0, 1, 1, 0];
        assert_eq!(code_action_counts(&codes, &actions), vec![vec![0, 2], vec![0, 0], vec![2, 1]]);
        assert!(code_action_counts(&[], &[]).is_empty());
    }

    #[test]
    fn transitions_pair_with_the_action_taken_before_them() {
        // 2 clips of 3 frames: codes of transitions 0→1, 1→2 per clip; actions per frame.
        let latent = [10, 11, 20, 21];
        let recorded = [1, 2, 3, 4, 5, 6];
        let (mut codes, mut truth) = (vec![7], vec![8]);
        pair_transitions(&latent, &recorded, 2, 3, &mut codes, &mut truth);
        assert_eq!(codes, [7, 10, 11, 20, 21]);
        assert_eq!(truth, [8, 1, 2, 4, 5]);
    }

    /// Naive reference: dense contingency table, `I = H(X) + H(Y) − H(X, Y)` in f64.
    fn naive(a: &[i64], b: &[i64], norm: Normalisation) -> f64 {
        let ka = (*a.iter().max().unwrap() + 1) as usize;
        let kb = (*b.iter().max().unwrap() + 1) as usize;
        let mut table = vec![vec![0.0f64; kb]; ka];
        for i in 0..a.len() {
            table[a[i] as usize][b[i] as usize] += 1.0;
        }
        let n = a.len() as f64;
        let h = |ps: Vec<f64>| -> f64 { ps.into_iter().filter(|&p| p > 0.0).map(|p| -p * p.ln()).sum() };
        let pa: Vec<f64> = table.iter().map(|row| row.iter().sum::<f64>() / n).collect();
        let pb: Vec<f64> = (0..kb).map(|j| table.iter().map(|row| row[j]).sum::<f64>() / n).collect();
        let pab: Vec<f64> = table.iter().flatten().map(|c| c / n).collect();
        let (ha, hb) = (h(pa), h(pb));
        let i = ha + hb - h(pab);
        match norm {
            Normalisation::Geometric => i / (ha * hb).sqrt(),
            Normalisation::Arithmetic => i / ((ha + hb) / 2.0),
        }
    }

    #[test]
    fn matches_the_naive_reference() {
        let cases: [(&[i64], &[i64]); 4] = [
            (&[0, 0, 1, 1, 2, 2], &[0, 0, 1, 1, 1, 1]),
            (&[0, 1, 2, 0, 1, 2, 0, 1], &[1, 1, 0, 0, 1, 0, 1, 1]),
            (&[3, 3, 0, 1, 2, 0, 1, 3, 2, 2], &[0, 1, 0, 1, 2, 2, 1, 0, 2, 0]),
            (&[0, 1, 1, 1, 0, 2], &[4, 4, 0, 4, 2, 2]),
        ];
        for (a, b) in cases {
            for norm in [Normalisation::Geometric, Normalisation::Arithmetic] {
                let (got, want) = (nmi(a, b, norm).unwrap(), naive(a, b, norm));
                assert!((got - want).abs() < 1e-12, "{a:?} {b:?} {norm:?}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn identical_labelings_score_one_and_renaming_changes_nothing() {
        let a = [0, 1, 2, 3, 0, 1, 2, 3, 1, 1];
        let renamed: Vec<i64> = a.iter().map(|&x| [7, 2, 9, 4][x as usize]).collect();
        for norm in [Normalisation::Geometric, Normalisation::Arithmetic] {
            assert!((nmi(&a, &a, norm).unwrap() - 1.0).abs() < 1e-12);
            assert!((nmi(&a, &renamed, norm).unwrap() - 1.0).abs() < 1e-12);
        }
        let b = [1, 1, 0, 2, 2, 0, 1, 0, 2, 1];
        let b_renamed: Vec<i64> = b.iter().map(|&x| [5, 0, 3][x as usize]).collect();
        let x = nmi(&a, &b, Normalisation::Geometric).unwrap();
        let y = nmi(&renamed, &b_renamed, Normalisation::Geometric).unwrap();
        let z = nmi(&b, &a, Normalisation::Geometric).unwrap();
        assert!((x - y).abs() < 1e-12 && (x - z).abs() < 1e-12, "{x} {y} {z}");
        assert!(x > 0.0 && x < 1.0, "{x}");
    }

    #[test]
    fn independent_labelings_score_about_zero() {
        // Exactly independent: every (x, y) pair occurs equally often.
        let a: Vec<i64> = (0..12).map(|i| i % 3).collect();
        let b: Vec<i64> = (0..12).map(|i| i / 3 % 4).collect();
        assert!(nmi(&a, &b, Normalisation::Geometric).unwrap().abs() < 1e-12);
        // Pseudo-random independent draws: close to 0 for many items.
        let mut state = 12345u64;
        let mut draw = |k: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % k) as i64
        };
        let a: Vec<i64> = (0..20000).map(|_| draw(6)).collect();
        let b: Vec<i64> = (0..20000).map(|_| draw(4)).collect();
        assert!(nmi(&a, &b, Normalisation::Geometric).unwrap() < 0.01);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(nmi(&[1, 1, 1], &[4, 4, 4], Normalisation::Geometric), Ok(1.0));
        assert_eq!(nmi(&[1, 1, 1], &[0, 1, 2], Normalisation::Geometric), Ok(0.0));
        assert_eq!(nmi(&[1, 1, 1], &[0, 1, 2], Normalisation::Arithmetic), Ok(0.0));
        assert_eq!(nmi(&[1, 2], &[1], Normalisation::Geometric), Err(NmiError::LengthMismatch(2, 1)));
        assert_eq!(nmi(&[], &[], Normalisation::Geometric), Err(NmiError::Empty));
    }
}
