use super::*;
use crate::dynamics::DynamicsConfig;
use burn::tensor::Distribution;

fn tiny(kind: DynamicsKind) -> Dynamics {
    tiny_with(kind, false)
}

fn tiny_with(kind: DynamicsKind, reversible: bool) -> Dynamics {
    tiny_from(tiny_config(kind, reversible))
}

fn tiny_from(cfg: DynamicsConfig) -> Dynamics {
    let device = Device::flex();
    device.seed(7);
    cfg.init(32, 4, &device).unwrap()
}

fn tiny_config(kind: DynamicsKind, reversible: bool) -> DynamicsConfig {
    let mut cfg = DynamicsConfig {
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        num_blocks: 2,
        action_dim: 4,
        ..DynamicsConfig::default_for(kind)
    };
    cfg.tokens_mut().expect("token dynamics").reversible = reversible;
    cfg
}

/// Context `[B, C, N]` of random tokens and actions `[B, S−1, 4]`.
fn inputs(b: usize, c: usize, n: usize, s: usize, seed: u64) -> (Tensor<3, Int>, Tensor<3>) {
    let device = Device::flex();
    let mut rng = jinn_data::rng::rng_for(seed, "sample-test", 0);
    let ids: Vec<i64> = (0..b * c * n).map(|_| rng.random_range(0..32)).collect();
    let context = Tensor::from_data(TensorData::new(ids, [b, c, n]), &device);
    let actions = Tensor::random([b, s - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    (context, actions)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn cached_vs_uncached(kind: DynamicsKind, argmax: bool) {
    cached_vs_uncached_of(tiny(kind), argmax);
}

fn cached_vs_uncached_of(model: Dynamics, argmax: bool) {
    cached_vs_uncached_on(model, argmax, 5);
}

/// Cached and uncached rollouts of frames of `n` tokens agree.
fn cached_vs_uncached_on(model: Dynamics, argmax: bool, n: usize) {
    let kind = model.kind();
    let (context, actions) = inputs(2, 2, n, 5, 1);
    let cfg = SamplerConfig { maskgit_steps: 4, argmax, seed: 3, ..Default::default() };
    let cached = sample(&model, context.clone(), actions.clone(), 5, &cfg).unwrap();
    let plain = sample(&model, context, actions, 5, &SamplerConfig { use_cache: false, ..cfg }).unwrap();
    let worst = max_abs_diff(&cached.logits, &plain.logits);
    assert!(worst < 1e-4, "{kind:?} argmax={argmax}: cached logits differ by {worst}");
    assert_eq!(cached.tokens, plain.tokens, "{kind:?} argmax={argmax}");
    assert_eq!(cached.logits.len(), 2 * 3 * n * 32);
}

#[test]
fn causal_cached_logits_equal_uncached() {
    cached_vs_uncached(DynamicsKind::CAUSAL, true);
    cached_vs_uncached(DynamicsKind::CAUSAL, false);
}

#[test]
fn maskgit_cached_logits_equal_uncached() {
    cached_vs_uncached(DynamicsKind::MASKGIT, true);
    cached_vs_uncached(DynamicsKind::MASKGIT, false);
}

#[test]
fn previous_frame_input_cached_logits_equal_uncached() {
    let mut cfg = tiny_config(DynamicsKind::MASKGIT, false);
    cfg.maskgit_mut().unwrap().previous_frame_input = true;
    cached_vs_uncached_of(tiny_from(cfg.clone()), true);
    cached_vs_uncached_of(tiny_from(cfg.clone()), false);
    // Reaching two and three frames back: the cached path sums the same tables.
    for depth in [2, 3] {
        cfg.maskgit_mut().unwrap().previous_frame_depth = depth;
        cached_vs_uncached_of(tiny_from(cfg.clone()), true);
    }
    // Reading the neighbourhood of frame t − 1 on a grid of 3 × 4 slots (the cached path
    // gathers the neighbours' ids on the host, the uncached one on the device).
    for (radius, depth) in [(1, 1), (2, 2)] {
        let s = cfg.maskgit_mut().unwrap();
        (s.previous_frame_radius, s.previous_frame_depth) = (radius, depth);
        let device = Device::flex();
        device.seed(7);
        let model = cfg.init_on_grid(32, 4, 4, &device).unwrap();
        cached_vs_uncached_on(model.clone(), true, 12);
        cached_vs_uncached_on(model, false, 12);
    }
}

#[test]
fn reversible_models_sample_through_their_reversible_backbone() {
    // The KV cache only knows the transformer's own blocks: a reversible model must take the
    // uncached path (whatever `use_cache` says) and so give the same rollout either way, and
    // its backbone must matter (a model without it samples differently).
    let model = tiny_with(DynamicsKind::MASKGIT, true);
    assert!(!model.reversible_blocks.is_empty());
    let (context, actions) = inputs(1, 1, 5, 3, 4);
    let cfg = SamplerConfig { maskgit_steps: 3, argmax: true, seed: 1, ..Default::default() };
    let cached = sample(&model, context.clone(), actions.clone(), 3, &cfg).unwrap();
    let plain = sample(
        &model,
        context.clone(),
        actions.clone(),
        3,
        &SamplerConfig { use_cache: false, ..cfg.clone() },
    )
    .unwrap();
    assert_eq!(cached.logits, plain.logits);
    let mut headless = model.clone();
    headless.reversible_blocks.clear();
    let without = sample(&headless, context, actions, 3, &cfg).unwrap();
    assert!(max_abs_diff(&cached.logits, &without.logits) > 1e-4, "the reversible blocks were skipped");
}

#[test]
fn maskgit_never_changes_context_tokens() {
    let model = tiny(DynamicsKind::MASKGIT);
    let (b, c, n, s) = (3, 2, 6, 5);
    let (context, actions) = inputs(b, c, n, s, 2);
    let want: Vec<i64> = context.clone().try_into_vec_as::<i64>().unwrap();
    for seed in 0..4 {
        for use_cache in [true, false] {
            let cfg = SamplerConfig { maskgit_steps: 6, seed, use_cache, ..Default::default() };
            let out = sample(&model, context.clone(), actions.clone(), s, &cfg).unwrap();
            for bi in 0..b {
                let got = &out.tokens[bi * s * n..(bi * s + c) * n];
                assert_eq!(got, &want[bi * c * n..(bi + 1) * c * n], "seed {seed} sample {bi}");
            }
            assert!(out.tokens.iter().all(|&t| (0..32).contains(&t)));
        }
    }
}

/// Frames `range` of `tokens` `[b, t, n]` as a tensor.
fn token_frames(tokens: &[i64], [b, t, n]: [usize; 3], range: std::ops::Range<usize>) -> Tensor<3, Int> {
    let len = range.len();
    Tensor::from_data(TensorData::new(frame_range(tokens, [b, t, n], range), [b, len, n]), &Device::flex())
}

#[test]
fn a_sliding_rollout_generates_each_frame_from_the_window_before_it() {
    let (b, c, n, frames, window) = (2, 2, 5, 7, 3);
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL] {
        let model = tiny(kind);
        let (context, actions) = inputs(b, c, n, frames, 9);
        let cfg = SamplerConfig { maskgit_steps: 4, argmax: true, ..Default::default() };
        let slid = sample(
            &model,
            context.clone(),
            actions.clone(),
            frames,
            &SamplerConfig { window: Some(window), ..cfg.clone() },
        )
        .unwrap();
        assert_eq!(slid.dims, [b, frames, n]);
        // Reference: one unwindowed call per frame, on at most `window − 1` frames before it.
        let mut tokens: Vec<i64> = context.try_into_vec_as().unwrap();
        let v = model.num_codes();
        for f in c..frames {
            let start = (f + 1).saturating_sub(window);
            let ctx = token_frames(&tokens, [b, f, n], start..f);
            let acts = actions.clone().slice([0..b, start..f, 0..4]);
            let one = sample(&model, ctx, acts, f + 1 - start, &cfg).unwrap();
            let g = f - c;
            for bi in 0..b {
                // `one` generated a single frame: its logits are [b, 1, n, v].
                let want = &one.logits[bi * n * v..][..n * v];
                let got = &slid.logits[(bi * (frames - c) + g) * n * v..][..n * v];
                assert!(max_abs_diff(want, got) < 1e-4, "{kind:?}: logits of frame {f}, entry {bi}");
            }
            let fresh = frame_range(&one.tokens, one.dims, f - start..f + 1 - start);
            tokens = concat_frames(&tokens, [b, f, n], &fresh, 1);
        }
        assert_eq!(slid.tokens, tokens, "{kind:?}");
    }
}

#[test]
fn the_passes_of_a_sliding_rollout() {
    let span = |start, context_end, end| WindowSpan { start, context_end, end };
    assert_eq!(windows(2, 5, 16), vec![span(0, 2, 5)]);
    assert_eq!(windows(2, 6, 4), vec![span(0, 2, 4), span(1, 4, 5), span(2, 5, 6)]);
    // More given frames than the window holds: only the last window − 1 are seen.
    assert_eq!(windows(5, 6, 3), vec![span(3, 5, 6)]);
}

#[test]
fn same_seed_same_rollout_other_seed_differs() {
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL] {
        let model = tiny(kind);
        let (context, actions) = inputs(1, 1, 8, 4, 4);
        let run = |seed| {
            let cfg = SamplerConfig { maskgit_steps: 5, seed, ..Default::default() };
            sample(&model, context.clone(), actions.clone(), 4, &cfg).unwrap().tokens
        };
        assert_eq!(run(11), run(11), "{kind:?}");
        assert_ne!(run(11), run(12), "{kind:?}: 24 draws from ~uniform over 32 codes");
    }
}

#[test]
fn keep_schedule_matches_the_reference_minus_its_extra_slot() {
    // `sample_maskgit`'s schedule, N = 16, 25 steps: positions kept masked after step s (reference, with +1).
    let reference =
        [17, 17, 17, 16, 16, 16, 15, 15, 15, 14, 13, 13, 12, 11, 10, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1];
    for (s, want) in reference.iter().enumerate() {
        assert_eq!(maskgit_keep_masked(16, s, 25), want - 1, "step {s}");
    }
    assert_eq!(maskgit_keep_masked(7, 0, 1), 0, "a single step fixes every token");
}

#[test]
fn draw_follows_the_tempered_softmax() {
    let logits = [0.0f32, 1.0, 2.0, -1.0];
    let mut rng = jinn_data::rng::rng_for(0, "draw-test", 0);
    assert_eq!(draw(&logits, 1.0, true, &mut rng).0, 2);
    assert_eq!(draw(&logits, 0.0, false, &mut rng), (2, 1.0));
    let tau = 0.7;
    let z: f64 = logits.iter().map(|&l| (l as f64 / tau).exp()).sum();
    let mut counts = [0usize; 4];
    let draws = 40_000;
    for _ in 0..draws {
        let (tok, p) = draw(&logits, tau, false, &mut rng);
        assert!((p - (logits[tok] as f64 / tau).exp() / z).abs() < 1e-12);
        counts[tok] += 1;
    }
    for (i, &c) in counts.iter().enumerate() {
        let want = (logits[i] as f64 / tau).exp() / z;
        let got = c as f64 / draws as f64;
        assert!((got - want).abs() < 0.01, "token {i}: {got} vs {want}");
    }
}

#[test]
fn bad_inputs_are_errors() {
    let model = tiny(DynamicsKind::MASKGIT);
    let (context, actions) = inputs(1, 1, 4, 3, 5);
    let cfg = SamplerConfig::default();
    assert!(sample(&model, context.clone(), actions.clone(), 1, &cfg).is_err(), "frames ≤ context");
    assert!(sample(&model, context.clone(), actions.clone(), 4, &cfg).is_err(), "too few actions");
    let zero_steps = SamplerConfig { maskgit_steps: 0, ..SamplerConfig::default() };
    assert!(sample(&model, context, actions.clone(), 3, &zero_steps).is_err());
    let bad = Tensor::<3, Int>::from_data(TensorData::new(vec![0i64, 1, 99, 2], [1, 1, 4]), &Device::flex());
    let err = sample(&model, bad, actions, 3, &cfg).unwrap_err();
    assert!(err.to_string().contains("99"), "{err}");
}
