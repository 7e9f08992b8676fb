//! The policies behind generated datasets.
//!
//! - [`StickyRandomPolicy`]: uniformly random actions, each repeated with a fixed probability,
//!   so episodes show sustained motion (a paddle sweeping across, an agent walking down a
//!   corridor) rather than jitter.
//! - [`GuidedPolicy`]: that random policy, with the game's scripted player
//!   ([`super::Env::guide_action`]) taking over a share of the steps. Random play loses the
//!   breakout ball within a few bounces, so the events a world model finds hardest (the ball
//!   bouncing off the paddle, breaking bricks) are rare in its data; following the ball part
//!   of the time keeps it in play while every action still occurs in every state.

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

/// The sticky random policy, with the game's guide action taken instead on a share of the
/// steps, seeded.
#[derive(Clone)]
pub struct GuidedPolicy {
    random: StickyRandomPolicy,
    coin: ChaCha8Rng,
    follow_prob: f64,
}

impl GuidedPolicy {
    /// A policy that takes the guide's action with probability `follow_prob` where the game
    /// offers one, else `random`'s. With `follow_prob` 0 it acts exactly as `random` does.
    pub fn new(random: StickyRandomPolicy, follow_prob: f64, seed: u64) -> Result<Self> {
        check_probability("--follow-prob", follow_prob)?;
        Ok(GuidedPolicy { random, coin: ChaCha8Rng::seed_from_u64(seed), follow_prob })
    }

    /// The next action, given the game's guide action for the current state. The random
    /// policy draws every step, so its own sequence does not depend on the guide.
    pub fn act(&mut self, guide: Option<usize>) -> usize {
        let random = self.random.act();
        match guide {
            Some(action) if self.follow_prob > 0.0 && self.coin.random_bool(self.follow_prob) => action,
            _ => random,
        }
    }
}

/// Error unless `p` is a probability (`--sticky-prob`).
pub fn check_sticky_prob(p: f64) -> Result<()> {
    check_probability("--sticky-prob", p)
}

/// Error unless `p` is a probability, naming `flag`.
pub fn check_probability(flag: &str, p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(DataError::invalid(flag, format!("{p}; expected a probability in [0, 1]")))
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

    #[test]
    fn a_guided_policy_follows_the_guide_at_its_rate_and_is_random_without_one() {
        let random = || StickyRandomPolicy::new(4, 0.7, 9).unwrap();
        // follow_prob 0: exactly the random policy, guide or not.
        let mut plain = random();
        let mut unguided = GuidedPolicy::new(random(), 0.0, 1).unwrap();
        assert!((0..500).all(|i| plain.act() == unguided.act(Some(i % 4))));
        // follow_prob 1: always the guide; without a guide, the random policy.
        let mut always = GuidedPolicy::new(random(), 1.0, 1).unwrap();
        assert!((0..500).all(|i| always.act(Some(i % 4)) == i % 4));
        let (mut unguided, mut plain) = (GuidedPolicy::new(random(), 1.0, 1).unwrap(), random());
        assert!((0..500).all(|_| unguided.act(None) == plain.act()));
        // follow_prob 0.6 with a guide that always says 3 and a random policy that never
        // does (one action): 3 in 60% of the steps.
        let mut mixed = GuidedPolicy::new(StickyRandomPolicy::new(1, 0.7, 2).unwrap(), 0.6, 3).unwrap();
        let share = (0..20_000).filter(|_| mixed.act(Some(3)) == 3).count() as f64 / 20_000.0;
        assert!((share - 0.6).abs() < 0.02, "guide share {share}");
        for bad in [-0.5, 1.01, f64::NAN] {
            let err = GuidedPolicy::new(random(), bad, 0).err().unwrap().to_string();
            assert!(err.contains("--follow-prob"), "{err}");
        }
    }
}
