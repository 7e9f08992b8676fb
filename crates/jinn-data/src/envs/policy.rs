//! The random policy behind generated datasets: uniformly random actions, each repeated with
//! a fixed probability, so episodes show sustained motion (a paddle sweeping across, an agent
//! walking down a corridor) rather than jitter.

use crate::error::{DataError, Result};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Default probability of repeating the previous action.
pub const DEFAULT_STICKY_PROB: f64 = 0.7;

/// Uniformly random actions with sticky repetition, seeded.
#[derive(Clone)]
pub struct StickyRandomPolicy {
    rng: ChaCha8Rng,
    num_actions: usize,
    sticky_prob: f64,
    previous: Option<usize>,
}

impl StickyRandomPolicy {
    /// A policy over `0..num_actions` that repeats its previous action with probability
    /// `sticky_prob` and otherwise draws uniformly (possibly the same action again).
    pub fn new(num_actions: usize, sticky_prob: f64, seed: u64) -> Result<Self> {
        check_sticky_prob(sticky_prob)?;
        if num_actions == 0 {
            return Err(DataError::invalid("num_actions", "a policy needs at least one action"));
        }
        Ok(StickyRandomPolicy {
            rng: ChaCha8Rng::seed_from_u64(seed),
            num_actions,
            sticky_prob,
            previous: None,
        })
    }

    /// The next action.
    pub fn act(&mut self) -> usize {
        let action = match self.previous {
            Some(a) if self.rng.random_bool(self.sticky_prob) => a,
            _ => self.rng.random_range(0..self.num_actions),
        };
        self.previous = Some(action);
        action
    }
}

/// Error unless `p` is a probability (`--sticky-prob`).
pub fn check_sticky_prob(p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(DataError::invalid("--sticky-prob", format!("{p}; expected a probability in [0, 1]")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_at_the_configured_rate_and_covers_all_actions() {
        for p in [0.0, 0.5, 0.8] {
            let mut policy = StickyRandomPolicy::new(4, p, 7).unwrap();
            let actions: Vec<usize> = (0..20_000).map(|_| policy.act()).collect();
            let repeats = actions.windows(2).filter(|w| w[0] == w[1]).count() as f64 / 19_999.0;
            // Repeat with p, or redraw the same action with (1 - p) / 4.
            let expected = p + (1.0 - p) / 4.0;
            assert!((repeats - expected).abs() < 0.02, "p={p}: repeat rate {repeats}, expected {expected}");
            for a in 0..4 {
                let share = actions.iter().filter(|&&x| x == a).count() as f64 / 20_000.0;
                assert!((share - 0.25).abs() < 0.05, "p={p}: action {a} share {share}");
            }
        }
        let mut always = StickyRandomPolicy::new(5, 1.0, 3).unwrap();
        let first = always.act();
        assert!((0..100).all(|_| always.act() == first));
    }

    #[test]
    fn is_deterministic_per_seed_and_rejects_bad_settings() {
        let run = |seed| {
            let mut p = StickyRandomPolicy::new(5, 0.8, seed).unwrap();
            (0..200).map(|_| p.act()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        for bad in [-0.1, 1.5, f64::NAN] {
            let err = StickyRandomPolicy::new(4, bad, 0).err().unwrap().to_string();
            assert!(err.contains("--sticky-prob"), "{err}");
        }
        assert!(StickyRandomPolicy::new(0, 0.5, 0).is_err());
    }
}
