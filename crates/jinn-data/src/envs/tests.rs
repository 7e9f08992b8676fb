//! Tests every registered environment must pass.

use super::policy::{StickyRandomPolicy, DEFAULT_STICKY_PROB};
use super::*;

const SHAPE: FrameShape = FrameShape { height: 64, width: 64, channels: 3 };

/// Frames `[steps, H, W, 3]` of `steps` steps under a sticky random policy, resetting on `done`.
fn rollout(name: &str, shape: FrameShape, seed: u64, steps: usize) -> Vec<u8> {
    let mut env = make_env(name, shape, seed).unwrap();
    let mut policy = StickyRandomPolicy::new(env.num_actions(), DEFAULT_STICKY_PROB, seed).unwrap();
    let mut frames = vec![0u8; steps * shape.frame_bytes()];
    for (t, frame) in frames.chunks_exact_mut(shape.frame_bytes()).enumerate() {
        env.render(frame);
        if env.step(policy.act()).unwrap().done {
            env.reset(seed + t as u64 + 1);
        }
    }
    frames
}

#[test]
fn same_seed_gives_identical_frames_and_other_seeds_differ() {
    for name in ENV_NAMES {
        let a = rollout(name, SHAPE, 11, 200);
        assert_eq!(a, rollout(name, SHAPE, 11, 200), "{name}: same seed");
        assert_ne!(a, rollout(name, SHAPE, 12, 200), "{name}: different seed");
        // Plenty of motion: most consecutive frames differ.
        let fb = SHAPE.frame_bytes();
        let changed = (1..200).filter(|&t| a[(t - 1) * fb..t * fb] != a[t * fb..(t + 1) * fb]).count();
        // Breakout's ball is always moving; a maze agent stands still on noop and wall bumps.
        let min_changed = if *name == "maze" { 70 } else { 150 };
        assert!(changed >= min_changed, "{name}: only {changed} of 199 steps changed the frame");
    }
}

#[test]
fn every_action_changes_the_future_from_the_same_state() {
    for name in ENV_NAMES {
        let n = make_env(name, SHAPE, 0).unwrap().num_actions();
        let mut differs_from_noop = vec![false; n];
        for seed in 0..8 {
            // Reach a common state by replaying the same prefix, then branch on each action.
            let branch = |action: usize| {
                let mut env = make_env(name, SHAPE, seed).unwrap();
                let mut policy = StickyRandomPolicy::new(n, 0.8, seed).unwrap();
                for _ in 0..30 {
                    if env.step(policy.act()).unwrap().done {
                        break;
                    }
                }
                let mut frames = vec![0u8; 4 * SHAPE.frame_bytes()];
                for frame in frames.chunks_exact_mut(SHAPE.frame_bytes()) {
                    env.step(action).unwrap();
                    env.render(frame);
                }
                frames
            };
            let futures: Vec<Vec<u8>> = (0..n).map(branch).collect();
            for a in 1..n {
                differs_from_noop[a] |= futures[a] != futures[0];
            }
            // Some actions can coincide in a given state (breakout's fire while the ball
            // flies, a paddle against a wall), but never all of them.
            let distinct = (0..n).filter(|&i| (0..i).all(|j| futures[i] != futures[j])).count();
            assert!(distinct >= 2, "{name} seed {seed}: only {distinct} distinct futures for {n} actions");
        }
        assert!(differs_from_noop[1..].iter().all(|&d| d), "{name}: {differs_from_noop:?}");
    }
}

#[test]
fn renders_at_any_size_and_upscales_exactly() {
    for name in ENV_NAMES {
        for (h, w) in [(16, 16), (64, 64), (48, 80), (100, 37), (17, 1024)] {
            let shape = FrameShape::rgb(h, w);
            let frames = rollout(name, shape, 3, 5);
            let last = &frames[4 * shape.frame_bytes()..];
            let colours: std::collections::BTreeSet<&[u8]> = last.chunks_exact(3).collect();
            assert!(colours.len() >= 4, "{name} {h}x{w}: {} colours", colours.len());
        }
        // Doubling the size doubles every pixel (the layout is the same at every size).
        let small = rollout(name, FrameShape::rgb(64, 128), 5, 3);
        let big = rollout(name, FrameShape::rgb(128, 256), 5, 3);
        for t in 0..3 {
            for r in 0..128 {
                for c in 0..256 {
                    let b = &big[((t * 128 + r) * 256 + c) * 3..][..3];
                    let s = &small[((t * 64 + r / 2) * 128 + c / 2) * 3..][..3];
                    assert_eq!(b, s, "{name} frame {t} pixel ({r},{c})");
                }
            }
        }
    }
}

#[test]
fn episodes_end_under_the_random_policy_and_stay_ended() {
    for name in ENV_NAMES {
        let mut env = make_env(name, SHAPE, 9).unwrap();
        let mut policy = StickyRandomPolicy::new(env.num_actions(), 0.8, 9).unwrap();
        let steps = (1..=20_000).find(|_| env.step(policy.act()).unwrap().done);
        assert!(steps.is_some(), "{name}: no end in 20000 steps");
        let mut before = vec![0u8; SHAPE.frame_bytes()];
        env.render(&mut before);
        for a in 0..env.num_actions() {
            assert_eq!(env.step(a).unwrap(), StepOutcome { reward: 0.0, done: true });
        }
        let mut after = vec![0u8; SHAPE.frame_bytes()];
        env.render(&mut after);
        assert_eq!(before, after, "{name}: stepping a finished episode changed it");
    }
}

#[test]
fn bad_names_shapes_and_actions_are_clear_errors() {
    let err = make_env("pong", SHAPE, 0).err().unwrap().to_string();
    assert!(err.contains("--env") && err.contains("pong") && err.contains("breakout, maze"), "{err}");
    assert!(check_env_name("maze").is_ok() && check_env_name("Maze").is_err());
    let err = make_env("maze", FrameShape::rgb(15, 64), 0).err().unwrap().to_string();
    assert!(err.contains("--height") && err.contains("15"), "{err}");
    let err = make_env("maze", FrameShape::rgb(64, 2000), 0).err().unwrap().to_string();
    assert!(err.contains("--width") && err.contains("2000"), "{err}");
    assert!(make_env("maze", FrameShape { height: 64, width: 64, channels: 1 }, 0).is_err());
    for name in ENV_NAMES {
        let mut env = make_env(name, SHAPE, 0).unwrap();
        let n = env.num_actions();
        assert_eq!(env.action_names().len(), n);
        assert_eq!(env.name(), *name);
        assert_eq!(env.frame_shape(), SHAPE);
        let err = env.step(n).err().unwrap();
        assert!(matches!(err, DataError::Invalid { .. }));
        let msg = err.to_string();
        assert!(msg.contains(&format!("{n} is not a {name} action")), "{msg}");
        assert!(msg.contains(&format!("0..={}", n - 1)) && msg.contains("0=noop"), "{msg}");
    }
}

#[test]
#[should_panic(expected = "render buffer holds")]
fn rendering_into_a_wrong_sized_buffer_panics_with_a_message() {
    let env = make_env("breakout", SHAPE, 0).unwrap();
    env.render(&mut [0u8; 10]);
}
