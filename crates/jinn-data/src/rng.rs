//! Derived randomness: every random draw in jinn is a pure function of
//! (seed, purpose, index), so a resumed run sees exactly what the uninterrupted one saw.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a hash of a purpose label, so streams for different purposes never collide.
fn purpose_hash(purpose: &str) -> u64 {
    purpose.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// A 64-bit seed derived from (seed, purpose, index).
pub fn derive_seed(seed: u64, purpose: &str, index: u64) -> u64 {
    mix64(mix64(seed ^ purpose_hash(purpose)).wrapping_add(mix64(index)))
}

/// A ChaCha8 generator for (seed, purpose, index).
pub fn rng_for(seed: u64, purpose: &str, index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, purpose, index))
}

/// The random streams of one batch, one per sample: sample `i` draws from
/// `(seed, purpose, first + i)`, where `first` is the global index of the batch's first sample.
/// A sample's draws (its dropout, mask, noise) then do not depend on which rank or micro-batch
/// holds it, so `N` ranks × batch `B` draw what one rank × batch `N·B` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleStreams {
    /// The run seed.
    pub seed: u64,
    /// What the draws are for (`"codebook-dropout"`, `"dynamics-mask"`, …).
    pub purpose: &'static str,
    /// Global index of the batch's first sample.
    pub first: u64,
    /// Samples in the batch.
    pub count: usize,
}

impl SampleStreams {
    /// The streams of `count` samples from global index `first` on.
    pub fn new(seed: u64, purpose: &'static str, first: u64, count: usize) -> SampleStreams {
        SampleStreams { seed, purpose, first, count }
    }

    /// The generator of sample `i` of the batch.
    pub fn sample(&self, i: usize) -> ChaCha8Rng {
        debug_assert!(i < self.count, "sample {i} of a batch of {}", self.count);
        rng_for(self.seed, self.purpose, self.first + i as u64)
    }

    /// The generators of every sample, in order.
    pub fn rngs(&self) -> Vec<ChaCha8Rng> {
        (0..self.count).map(|i| self.sample(i)).collect()
    }

    /// The same samples' streams for another purpose.
    pub fn for_purpose(self, purpose: &'static str) -> SampleStreams {
        SampleStreams { purpose, ..self }
    }

    /// Samples `i0..i0 + count` of this batch, as a batch of their own.
    pub fn slice(self, i0: usize, count: usize) -> SampleStreams {
        debug_assert!(i0 + count <= self.count, "samples {i0}..{} of {}", i0 + count, self.count);
        SampleStreams { first: self.first + i0 as u64, count, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_by_each_input_and_repeat_exactly() {
        let a = derive_seed(1, "window", 7);
        assert_eq!(a, derive_seed(1, "window", 7));
        assert_ne!(a, derive_seed(2, "window", 7));
        assert_ne!(a, derive_seed(1, "shuffle", 7));
        assert_ne!(a, derive_seed(1, "window", 8));
    }

    #[test]
    fn a_samples_stream_depends_on_its_global_index_only() {
        use rand::Rng;
        let whole = SampleStreams::new(5, "mask", 8, 4);
        let halves = [whole.slice(0, 2), SampleStreams::new(5, "mask", 10, 2)];
        let draw = |s: &SampleStreams, i: usize| s.sample(i).random::<u64>();
        assert_eq!(draw(&whole, 1), draw(&halves[0], 1));
        assert_eq!(draw(&whole, 3), draw(&halves[1], 1));
        assert_ne!(draw(&whole, 0), draw(&whole, 1));
        assert_ne!(draw(&whole, 0), draw(&whole.for_purpose("noise"), 0));
    }
}
