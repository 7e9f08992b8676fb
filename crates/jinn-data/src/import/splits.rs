//! Deterministic train/val/test assignment of imported episodes.
//!
//! Episodes are first put in a seeded random order ([`seeded_shuffle`]; Jasmine's converters
//! shuffle without a seed, so their splits cannot be reproduced). They are then assigned one
//! by one, in that order, by [`SplitAssigner`]: each episode goes to the split that is furthest
//! below its target share of frames once this episode is counted. This needs no frame counts
//! in advance, so videos can be decoded one at a time, and it keeps every split's share of
//! frames within one episode of its target. Ties go to train, then val, then test; a split
//! whose fraction is 0 never receives an episode.

use crate::error::{DataError, Result};
use rand::seq::SliceRandom;

/// One of the three splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Split {
    /// `train/`.
    Train,
    /// `val/`.
    Val,
    /// `test/`.
    Test,
}

impl Split {
    /// All splits in assignment-tie order.
    pub const ALL: [Split; 3] = [Split::Train, Split::Val, Split::Test];

    /// Directory name (`train`, `val`, `test`).
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
        }
    }
}

/// Target shares of frames per split (normalised by their sum; default 0.8 / 0.1 / 0.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitFractions {
    /// Share for `train/`.
    pub train: f64,
    /// Share for `val/`.
    pub val: f64,
    /// Share for `test/`.
    pub test: f64,
}

impl Default for SplitFractions {
    fn default() -> Self {
        SplitFractions { train: 0.8, val: 0.1, test: 0.1 }
    }
}

impl SplitFractions {
    /// The fractions normalised to sum 1, in [`Split::ALL`] order; an error unless all are
    /// finite and non-negative with a positive sum.
    pub fn normalized(&self) -> Result<[f64; 3]> {
        let f = [self.train, self.val, self.test];
        let sum: f64 = f.iter().sum();
        if f.iter().any(|v| !v.is_finite() || *v < 0.0) || sum <= 0.0 {
            return Err(DataError::invalid(
                "split fractions (--train/--val/--test)",
                format!(
                    "{} / {} / {}; expected finite, non-negative numbers with a positive sum",
                    self.train, self.val, self.test
                ),
            ));
        }
        Ok(f.map(|v| v / sum))
    }
}

/// Streaming assignment of episodes to splits by frame share (see the module docs).
#[derive(Debug, Clone)]
pub struct SplitAssigner {
    fractions: [f64; 3],
    frames: [usize; 3],
}

impl SplitAssigner {
    /// An assigner with no episodes yet.
    pub fn new(fractions: SplitFractions) -> Result<Self> {
        Ok(SplitAssigner { fractions: fractions.normalized()?, frames: [0; 3] })
    }

    /// The split for the next episode, of `frames` frames, and count it there.
    pub fn assign(&mut self, frames: usize) -> Split {
        let total = (self.frames.iter().sum::<usize>() + frames) as f64;
        let mut best = 0;
        let mut best_deficit = f64::NEG_INFINITY;
        for (i, (&frac, &have)) in self.fractions.iter().zip(&self.frames).enumerate() {
            if frac == 0.0 {
                continue;
            }
            let deficit = frac * total - have as f64;
            if deficit > best_deficit {
                best = i;
                best_deficit = deficit;
            }
        }
        self.frames[best] += frames;
        Split::ALL[best]
    }

    /// Frames assigned so far, in [`Split::ALL`] order.
    pub fn frames(&self) -> [usize; 3] {
        self.frames
    }
}

/// Shuffle `items` with a generator derived from `seed` (purpose `"import-episode-order"`).
pub fn seeded_shuffle<T>(items: &mut [T], seed: u64) {
    items.shuffle(&mut crate::rng::rng_for(seed, "import-episode-order", 0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_stay_within_one_episode_of_target() {
        let mut a = SplitAssigner::new(SplitFractions::default()).unwrap();
        let lens: Vec<usize> = (0..200).map(|i| 50 + (i * 37) % 300).collect();
        for (n, &len) in lens.iter().enumerate() {
            a.assign(len);
            let total: usize = lens[..=n].iter().sum();
            for (k, target) in [0.8, 0.1, 0.1].into_iter().enumerate() {
                let dev = (a.frames()[k] as f64 - target * total as f64).abs();
                assert!(dev <= 350.0, "after {n} episodes split {k} is {dev} frames off");
            }
        }
        assert_eq!(a.frames().iter().sum::<usize>(), lens.iter().sum::<usize>());
    }

    #[test]
    fn small_cases_and_zero_fractions() {
        // Equal episodes: train, train, train, then val is furthest behind (0.4 vs train's 0.2).
        let mut a = SplitAssigner::new(SplitFractions::default()).unwrap();
        let got: Vec<Split> = (0..5).map(|_| a.assign(10)).collect();
        assert_eq!(got, [Split::Train, Split::Train, Split::Train, Split::Val, Split::Train]);
        let mut a = SplitAssigner::new(SplitFractions { train: 1.0, val: 0.0, test: 0.0 }).unwrap();
        assert!((0..20).all(|i| a.assign(i) == Split::Train));
        let mut a = SplitAssigner::new(SplitFractions { train: 0.0, val: 0.0, test: 3.0 }).unwrap();
        assert_eq!(a.assign(0), Split::Test);
        assert!(SplitAssigner::new(SplitFractions { train: 0.0, val: 0.0, test: 0.0 }).is_err());
        assert!(SplitAssigner::new(SplitFractions { train: f64::NAN, val: 0.1, test: 0.1 }).is_err());
        assert!(SplitAssigner::new(SplitFractions { train: -1.0, val: 1.0, test: 1.0 }).is_err());
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let base: Vec<u32> = (0..50).collect();
        let (mut a, mut b, mut c) = (base.clone(), base.clone(), base.clone());
        seeded_shuffle(&mut a, 1);
        seeded_shuffle(&mut b, 1);
        seeded_shuffle(&mut c, 2);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, base);
        a.sort();
        assert_eq!(a, base);
    }
}
