use super::*;
use burn::optim::GradientsParams;
use burn::tensor::TensorData;
use jinn_data::rng::SampleStreams;
use jinn_nn::ops::token_cross_entropy;
use jinn_train::optim::OptimConfig;
use rand::Rng;

fn tiny(kind: DynamicsKind) -> DynamicsConfig {
    DynamicsConfig {
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        num_blocks: 2,
        action_dim: 4,
        ..DynamicsConfig::default_for(kind)
    }
}

/// Axial transformer `I → M → O` parameters (Jasmine's `AxialTransformer`), written out per layer.
fn axial_params(i: usize, m: usize, d: usize, o: usize, blocks: usize) -> usize {
    let block = 3 * 2 * m + 2 * 4 * (m * m + m) + (m * d + d) + (d * m + m);
    2 * i + (i * m + m) + 2 * m + blocks * block + (m * o + o)
}

/// Jasmine's dynamics (`DynamicsMaskGIT`, `DynamicsCausal`): embedding `V×M`, mask token `M` (MaskGIT only),
/// action projection `La → M`, transformer `M → V`.
fn jasmine_dynamics_params(c: &DynamicsConfig, v: usize, la: usize) -> usize {
    let m = c.model_dim;
    let mask = if c.kind() == DynamicsKind::MASKGIT { m } else { 0 };
    v * m + mask + (la * m + m) + axial_params(m, m, c.ffn_dim, v, c.num_blocks)
}

#[test]
fn parameter_counts_match_jasmine() {
    let device = Device::flex();
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL] {
        for (cfg, v, la) in [(tiny(kind), 32, 4), (DynamicsConfig::default_for(kind), 1024, 32)] {
            let model = cfg.init(v, la, &device).unwrap();
            assert_eq!(model.num_params(), jasmine_dynamics_params(&cfg, v, la), "{cfg:?}");
        }
    }
    // Jasmine's own parameter counts at its defaults.
    let d = |kind| jasmine_dynamics_params(&DynamicsConfig::default_for(kind), 1024, 32);
    assert_eq!(d(DynamicsKind::MASKGIT), 26_555_904);
    assert_eq!(d(DynamicsKind::CAUSAL), 26_555_392);
}

fn tokens(v: &[i64], dims: [usize; 3], device: &Device) -> Tensor<3, Int> {
    Tensor::from_data(TensorData::new(v.to_vec(), dims), device)
}

fn random_tokens(dims: [usize; 3], k: usize, seed: u64) -> Vec<i64> {
    let mut rng = jinn_data::rng::rng_for(seed, "test-tokens", 0);
    (0..dims.iter().product::<usize>()).map(|_| rng.random_range(0..k as i64)).collect()
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

#[test]
fn first_frame_is_never_masked_and_ratio_is_at_least_the_limit() {
    let (b, t, n) = (64, 3, 16);
    let mask = maskgit::draw_mask([b, t, n], 0.5, false, &SampleStreams::new(1, "test", 0, b)).unwrap();
    for sample in mask.chunks(t * n) {
        assert!(sample[..n].iter().all(|&m| !m), "frame 0 masked");
    }
    let rest: Vec<bool> = mask.chunks(t * n).flat_map(|s| s[n..].to_vec()).collect();
    let rate = rest.iter().filter(|&&m| m).count() as f64 / rest.len() as f64;
    // E[p] = 0.75 for p ~ U[0.5, 1); 2048 draws.
    assert!((0.65..0.85).contains(&rate), "mask rate {rate}");
    let again = maskgit::draw_mask([b, t, n], 0.5, false, &SampleStreams::new(1, "test", 0, b)).unwrap();
    assert_eq!(again, mask, "same streams, same mask");
    // A clip's mask depends on its own stream only: the second half drawn as a batch of its own.
    let half = SampleStreams::new(1, "test", (b / 2) as u64, b / 2);
    let second = maskgit::draw_mask([b / 2, t, n], 0.5, false, &half).unwrap();
    assert_eq!(second, mask[b / 2 * t * n..], "clips keyed by their global index");
    assert!(maskgit::draw_mask([b, t, n], 0.5, false, &half).is_err(), "streams for another batch size");
}

#[test]
fn a_per_frame_ratio_varies_between_frames_of_a_clip() {
    let (b, t, n) = (64, 8, 64);
    // Mean over clips of the spread (largest minus smallest masked share) of frames 1..T−1.
    let spread = |mask: &[bool]| {
        let per_clip = mask.chunks(t * n).map(|clip| {
            let shares: Vec<f64> =
                clip.chunks(n).skip(1).map(|f| f.iter().filter(|&&m| m).count() as f64 / n as f64).collect();
            shares.iter().cloned().fold(0.0, f64::max) - shares.iter().cloned().fold(1.0, f64::min)
        });
        per_clip.sum::<f64>() / b as f64
    };
    let streams = SampleStreams::new(3, "test", 0, b);
    let per_clip = maskgit::draw_mask([b, t, n], 0.0, false, &streams).unwrap();
    let per_frame = maskgit::draw_mask([b, t, n], 0.0, true, &streams).unwrap();
    // One ratio per clip: frames differ only by the binomial noise of 64 draws (spread ≈ 0.15);
    // one per frame: the range of 7 draws from U[0, 1) (≈ 0.75).
    assert!(spread(&per_clip) < 0.25, "per-clip spread {}", spread(&per_clip));
    assert!(spread(&per_frame) > 0.5, "per-frame spread {}", spread(&per_frame));
    for clip in per_frame.chunks(t * n) {
        assert!(clip[..n].iter().all(|&m| !m), "frame 0 masked");
    }
    assert_eq!(maskgit::draw_mask([b, t, n], 0.0, true, &streams).unwrap(), per_frame, "reproducible");
}

/// Naive f64 cross-entropy and z-loss over the weighted positions.
fn naive_losses(logits: &[f32], targets: &[i64], weight: &[bool], v: usize) -> (f64, f64) {
    let (mut ce, mut z, mut count) = (0.0, 0.0, 0.0);
    for ((row, &tg), &w) in logits.chunks(v).zip(targets).zip(weight) {
        if !w {
            continue;
        }
        let lse = row.iter().map(|&x| (x as f64).exp()).sum::<f64>().ln();
        ce += lse - row[tg as usize] as f64;
        z += lse * lse;
        count += 1.0;
    }
    (ce / count, z / count)
}

#[test]
fn loss_counts_only_masked_positions_as_the_naive_computation_does() {
    let device = Device::flex().autodiff();
    let dims = [2, 3, 5];
    let v = 7;
    let logits = Tensor::<4>::random([2, 3, 5, v], Distribution::Normal(0.0, 2.0), &device).require_grad();
    let targets = random_tokens(dims, v, 4);
    let mask = maskgit::draw_mask(dims, 0.5, false, &SampleStreams::new(2, "test", 0, 2)).unwrap();
    let weight = maskgit::mask_tensor(&mask, dims, &device).float();
    let losses = token_cross_entropy(logits.clone(), tokens(&targets, dims, &device), weight, 0.0);
    let (want_ce, want_z) = naive_losses(&floats(logits.clone()), &targets, &mask, v);
    assert!((losses.ce.into_scalar::<f32>() as f64 - want_ce).abs() < 1e-5);
    assert!((losses.z.into_scalar::<f32>() as f64 - want_z).abs() < 1e-4);
    assert!((losses.loss.clone().into_scalar::<f32>() as f64 - want_ce).abs() < 1e-5);
    // No gradient reaches the logits of unmasked positions; every masked one gets some.
    let grads = losses.loss.backward();
    let g = floats(logits.grad(&grads).unwrap());
    for (row, &m) in g.chunks(v).zip(&mask) {
        assert_eq!(row.iter().any(|&x| x != 0.0), m);
    }
}

#[test]
fn token_metrics_match_sorting() {
    let v = 9;
    let mut rng = jinn_data::rng::rng_for(5, "test", 0);
    let logits: Vec<f32> = (0..40 * v).map(|_| rng.random_range(-3.0..3.0)).collect();
    let targets: Vec<i64> = (0..40).map(|_| rng.random_range(0..v as i64)).collect();
    let weight: Vec<bool> = (0..40).map(|i| i % 3 != 0).collect();
    let m = TokenMetrics::compute(&logits, &targets, &weight, v);
    let (mut hits, mut ent, mut count) = ([0.0f64; 3], 0.0, 0.0);
    for ((row, &tg), _) in logits.chunks(v).zip(&targets).zip(&weight).filter(|(_, &w)| w) {
        let mut order: Vec<usize> = (0..v).collect();
        order.sort_by(|&a, &b| row[b].partial_cmp(&row[a]).unwrap());
        let pos = order.iter().position(|&i| i as i64 == tg).unwrap();
        for (h, k) in hits.iter_mut().zip([1, 2, 5]) {
            *h += (pos < k) as u8 as f64;
        }
        let z: f64 = row.iter().map(|&x| (x as f64).exp()).sum();
        ent -= row.iter().map(|&x| (x as f64).exp() / z).map(|p| p * p.ln()).sum::<f64>();
        count += 1.0;
    }
    assert_eq!(m.count, count as usize);
    assert!((m.top1 - hits[0] / count).abs() < 1e-12);
    assert!((m.top2 - hits[1] / count).abs() < 1e-12);
    assert!((m.top5 - hits[2] / count).abs() < 1e-12);
    assert!((m.entropy - ent / count).abs() < 1e-9);
}

#[test]
fn causal_logits_depend_only_on_earlier_slots() {
    let device = Device::flex();
    let model = tiny(DynamicsKind::CAUSAL).init(11, 4, &device).unwrap();
    let (b, t, n, v) = (1, 3, 5, 11);
    let base = random_tokens([b, t, n], v, 7);
    let actions = Tensor::<3>::random([b, t - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    let run =
        |toks: &[i64]| floats(model.logits(tokens(toks, [b, t, n], &device), actions.clone(), None).unwrap());
    let y = run(&base);
    let at = |y: &[f32], ti: usize, ni: usize| y[(ti * n + ni) * v..(ti * n + ni + 1) * v].to_vec();
    // Change one token (tp, np) at a time; the logits at (ti, ni) may change only if
    // tp ≤ ti and np < ni (the documented information flow).
    for tp in 0..t {
        for np in 0..n {
            let mut toks = base.clone();
            toks[tp * n + np] = (toks[tp * n + np] + 1) % v as i64;
            let y2 = run(&toks);
            for ti in 0..t {
                for ni in 0..n {
                    let may = tp <= ti && np < ni;
                    let changed = at(&y, ti, ni) != at(&y2, ti, ni);
                    assert!(may || !changed, "token ({tp},{np}) leaked into logits ({ti},{ni})");
                    if tp == ti && np + 1 == ni {
                        assert!(changed, "logits ({ti},{ni}) ignore the previous token");
                    }
                }
            }
        }
    }
    // Token 0 of frame 1 depends on the action into frame 1, not on the later one.
    let a2 = actions.clone().slice_assign([0..1, 1..2, 0..4], Tensor::ones([1, 1, 4], &device));
    let y3 = floats(model.logits(tokens(&base, [b, t, n], &device), a2, None).unwrap());
    assert_eq!(at(&y, 1, 0), at(&y3, 1, 0));
    assert_ne!(at(&y, 2, 0), at(&y3, 2, 0));
}

#[test]
fn maskgit_masked_inputs_are_ignored_and_frames_are_causal() {
    let device = Device::flex();
    let model = tiny(DynamicsKind::MASKGIT).init(11, 4, &device).unwrap();
    let (b, t, n, v) = (1, 3, 4, 11);
    let base = random_tokens([b, t, n], v, 8);
    let actions = Tensor::<3>::random([b, t - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    let mut mask = vec![false; t * n];
    mask[n + 1] = true; // (frame 1, token 1)
    let run = |toks: &[i64]| {
        let m = maskgit::mask_tensor(&mask, [b, t, n], &device);
        floats(model.logits(tokens(toks, [b, t, n], &device), actions.clone(), Some(m)).unwrap())
    };
    let y = run(&base);
    let mut other = base.clone();
    other[n + 1] = (other[n + 1] + 3) % v as i64; // the masked token's value is hidden
    assert_eq!(run(&other), y);
    other[2 * n] = (other[2 * n] + 1) % v as i64; // frame 2 does not reach frames 0..1
    let y2 = run(&other);
    assert_eq!(y[..2 * n * v], y2[..2 * n * v]);
    assert_ne!(y[2 * n * v..], y2[2 * n * v..]);
    // Shape checks.
    let bad = Tensor::<3>::zeros([b, t, 4], &device);
    assert!(model.logits(tokens(&base, [b, t, n], &device), bad, None).is_err());
    let causal = tiny(DynamicsKind::CAUSAL).init(11, 4, &device).unwrap();
    let m = maskgit::mask_tensor(&mask, [b, t, n], &device);
    assert!(causal.logits(tokens(&base, [b, t, n], &device), actions, Some(m)).is_err());
}

#[test]
fn maskgit_and_causal_losses_fall_on_one_batch() {
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL] {
        let device = Device::flex().autodiff();
        device.seed(9);
        let mut model = tiny(kind).init(8, 4, &device).unwrap();
        let mut optim = OptimConfig::default().init().unwrap();
        let dims = [2, 3, 4];
        // Frame t+1 is frame t shifted by one token: predictable from the context.
        let toks: Vec<i64> = (0..24).map(|i| ((i / 12) as i64 * 3 + (i % 12) as i64) % 8).collect();
        let targets = tokens(&toks, dims, &device);
        let actions = Tensor::<3>::zeros([2, 2, 4], &device);
        let mut losses = Vec::new();
        for step in 0..60 {
            let (mask, weight) = if kind == DynamicsKind::MASKGIT {
                let m = maskgit::draw_mask(dims, 0.5, false, &SampleStreams::new(0, "t", step, 2)).unwrap();
                let mt = maskgit::mask_tensor(&m, dims, &device);
                (Some(mt.clone()), mt.float())
            } else {
                (None, causal::all_positions(dims, &device))
            };
            let logits = model.logits(targets.clone(), actions.clone(), mask).unwrap();
            let ce = token_cross_entropy(logits, targets.clone(), weight, 0.0).loss;
            losses.push(ce.clone().into_scalar::<f32>());
            model = optim.step(3e-3, model.clone(), GradientsParams::from_grads(ce.backward(), &model));
        }
        let (first, last) = (losses[0], *losses.last().unwrap());
        eprintln!("{kind:?} overfit: CE {first} → {last}");
        assert!(last * 4.0 <= first, "{kind:?}: CE {first} → {last}");
    }
}

#[test]
fn the_per_frame_mask_setting_reaches_the_model() {
    let device = Device::flex();
    let mut cfg = tiny(DynamicsKind::MASKGIT);
    assert!(!cfg.init(11, 4, &device).unwrap().mask_ratio_per_frame, "off by default, as Jasmine");
    cfg.maskgit_mut().unwrap().mask_ratio_per_frame = true;
    assert!(cfg.init(11, 4, &device).unwrap().mask_ratio_per_frame);
    assert!(
        !tiny(DynamicsKind::CAUSAL).init(11, 4, &device).unwrap().mask_ratio_per_frame,
        "causal masks nothing"
    );
}

#[test]
fn previous_frame_input_shows_a_masked_frame_its_predecessor_whole() {
    let device = Device::flex();
    let mut cfg = tiny(DynamicsKind::MASKGIT);
    cfg.maskgit_mut().unwrap().previous_frame_input = true;
    let model = cfg.init(11, 4, &device).unwrap();
    let (b, t, n, v) = (1, 3, 4, 11);
    let base = random_tokens([b, t, n], v, 8);
    let actions = Tensor::<3>::random([b, t - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    // Frames 1 and 2 wholly masked: only frame 0 is visible as a frame.
    let mut mask = vec![true; t * n];
    mask[..n].fill(false);
    let run = |toks: &[i64]| {
        let m = maskgit::mask_tensor(&mask, [b, t, n], &device);
        floats(model.logits(tokens(toks, [b, t, n], &device), actions.clone(), Some(m)).unwrap())
    };
    let y = run(&base);
    // A masked token of frame 1 is hidden from frame 1 but reaches frame 2 as its predecessor.
    let mut other = base.clone();
    other[n + 2] = (other[n + 2] + 3) % v as i64;
    let y1 = run(&other);
    assert_eq!(y[..2 * n * v], y1[..2 * n * v], "frames 0..1 do not see their own masked tokens");
    assert_ne!(y[2 * n * v..], y1[2 * n * v..], "frame 2 sees frame 1's tokens whole");
    // Frame 2's own tokens stay hidden, and nothing later reaches earlier frames.
    let mut later = base.clone();
    later[2 * n + 1] = (later[2 * n + 1] + 5) % v as i64;
    assert_eq!(run(&later), y);
    // Without the input, the same change of a masked frame-1 token reaches nothing.
    let plain = tiny(DynamicsKind::MASKGIT).init(11, 4, &device).unwrap();
    let m = maskgit::mask_tensor(&mask, [b, t, n], &device);
    let p0 =
        floats(plain.logits(tokens(&base, [b, t, n], &device), actions.clone(), Some(m.clone())).unwrap());
    let p1 = floats(plain.logits(tokens(&other, [b, t, n], &device), actions.clone(), Some(m)).unwrap());
    assert_eq!(p0, p1);
}

#[test]
fn previous_frame_rows_sum_each_earlier_frame_through_its_own_table() {
    let device = Device::flex();
    let mut cfg = tiny(DynamicsKind::MASKGIT);
    let settings = cfg.maskgit_mut().unwrap();
    settings.previous_frame_input = true;
    settings.previous_frame_depth = 3;
    let model = cfg.init(11, 4, &device).unwrap();
    assert_eq!(model.previous_frame_tables().count(), 3);
    let tables: Vec<Vec<f32>> = model.previous_frame_tables().map(|p| floats(p.val())).collect();
    let (b, t, n, m) = (2, 5, 3, cfg.model_dim);
    let toks = random_tokens([b, t, n], 11, 4);
    let got = floats(model.previous_frame_rows(&tokens(&toks, [b, t, n], &device)).unwrap());
    // Naive reference: row (b, t, n) adds table k's row of token (t − k, n) for each k ≤ t.
    for bi in 0..b {
        for ti in 0..t {
            for ni in 0..n {
                for c in 0..m {
                    let want: f32 = (1..=3usize.min(ti))
                        .map(|k| tables[k - 1][toks[(bi * t + ti - k) * n + ni] as usize * m + c])
                        .sum();
                    let at = ((bi * t + ti) * n + ni) * m + c;
                    assert!((got[at] - want).abs() < 1e-6, "({bi}, {ti}, {ni}, {c}): {} vs {want}", got[at]);
                }
            }
        }
    }
    // Depth 0, or a depth without the input, is refused by name.
    for (input, depth) in [(true, 0), (false, 2)] {
        let mut bad = tiny(DynamicsKind::MASKGIT);
        let s = bad.maskgit_mut().unwrap();
        s.previous_frame_input = input;
        s.previous_frame_depth = depth;
        let err = bad.init(11, 4, &device).unwrap_err().to_string();
        assert!(err.contains("previous_frame_depth"), "{err}");
    }
}

#[test]
fn previous_frame_neighbourhood_reads_the_grid_around_each_slot() {
    let device = Device::flex();
    let mut cfg = tiny(DynamicsKind::MASKGIT);
    let settings = cfg.maskgit_mut().unwrap();
    (settings.previous_frame_input, settings.previous_frame_depth, settings.previous_frame_radius) =
        (true, 2, 1);
    // A grid of 3 rows × 4 columns.
    let (rows, cols) = (3, 4);
    let model = cfg.init_on_grid(11, 4, cols, &device).unwrap();
    assert_eq!(model.neighbour_embeds.len(), 8);
    let own: Vec<Vec<f32>> = model.previous_frame_tables().map(|p| floats(p.val())).collect();
    let around: Vec<Vec<f32>> = model.neighbour_embeds.iter().map(|p| floats(p.val())).collect();
    let (b, t, n, m) = (2, 4, rows * cols, cfg.model_dim);
    let toks = random_tokens([b, t, n], 11, 5);
    let got = floats(model.previous_frame_rows(&tokens(&toks, [b, t, n], &device)).unwrap());
    let token = |bi: usize, ti: usize, y: usize, x: usize| toks[(bi * t + ti) * n + y * cols + x] as usize;
    // Naive reference: own position in frames t − 1 and t − 2, and the 8 neighbours (row-major
    // offsets, the centre skipped) of frame t − 1 that lie on the grid.
    for bi in 0..b {
        for ti in 0..t {
            for (y, x) in (0..rows).flat_map(|y| (0..cols).map(move |x| (y, x))) {
                for c in 0..m {
                    let mut want = 0.0f32;
                    for k in 1..=2usize.min(ti) {
                        want += own[k - 1][token(bi, ti - k, y, x) * m + c];
                    }
                    if ti >= 1 {
                        let offsets = (-1isize..=1).flat_map(|dy| (-1isize..=1).map(move |dx| (dy, dx)));
                        for (table, (dy, dx)) in around.iter().zip(offsets.filter(|&o| o != (0, 0))) {
                            let (yy, xx) = (y as isize + dy, x as isize + dx);
                            if (0..rows as isize).contains(&yy) && (0..cols as isize).contains(&xx) {
                                want += table[token(bi, ti - 1, yy as usize, xx as usize) * m + c];
                            }
                        }
                    }
                    let at = ((bi * t + ti) * n + y * cols + x) * m + c;
                    assert!(
                        (got[at] - want).abs() < 1e-5,
                        "({bi}, {ti}, {y}, {x}, {c}): {} vs {want}",
                        got[at]
                    );
                }
            }
        }
    }
    // A frame that is not a whole number of grid rows is refused by name.
    let actions = Tensor::<3>::zeros([1, 1, 4], &device);
    let err = model.logits(tokens(&[0; 10], [1, 2, 5], &device), actions, None).unwrap_err().to_string();
    assert!(err.contains("tokens per frame") && err.contains("4 columns"), "{err}");
    // A radius without the previous-frame input, or without a grid, is refused by name.
    let mut bad = tiny(DynamicsKind::MASKGIT);
    bad.maskgit_mut().unwrap().previous_frame_radius = 1;
    let err = bad.init_on_grid(11, 4, cols, &device).unwrap_err().to_string();
    assert!(err.contains("previous_frame_radius"), "{err}");
    let err = cfg.init(11, 4, &device).unwrap_err().to_string();
    assert!(err.contains("previous_frame_radius") && err.contains("patch grid"), "{err}");
}

/// `previous_frame_own_share`: clips drawn from their own streams (masks unchanged), each
/// with the given probability; the read tokens take the prediction exactly at the masked
/// positions of the drawn clips; a share out of [0, 1] or without the input is refused.
#[test]
fn own_previous_frames_are_drawn_per_clip_and_replace_only_masked_tokens() {
    let b = 400;
    let streams = SampleStreams::new(5, "test", 0, b);
    assert_eq!(maskgit::own_previous_clips(&streams, b, 0.0).unwrap(), vec![false; b]);
    assert_eq!(maskgit::own_previous_clips(&streams, b, 1.0).unwrap(), vec![true; b]);
    let half = maskgit::own_previous_clips(&streams, b, 0.5).unwrap();
    let drawn = half.iter().filter(|&&o| o).count();
    assert!((150..250).contains(&drawn), "{drawn} of {b} clips at share 0.5");
    assert_eq!(maskgit::own_previous_clips(&streams, b, 0.5).unwrap(), half, "reproducible");
    let mask = maskgit::draw_mask([b, 3, 4], 0.5, true, &streams).unwrap();
    assert_eq!(maskgit::draw_mask([b, 3, 4], 0.5, true, &streams).unwrap(), mask);

    let (truth, guess) = (random_tokens([3, 2, 4], 9, 1), random_tokens([3, 2, 4], 9, 2));
    let mask = maskgit::draw_mask([3, 2, 4], 0.0, false, &SampleStreams::new(1, "test", 0, 3)).unwrap();
    let own = [true, false, true];
    let read = maskgit::own_previous_tokens(&truth, &guess, &mask, &own);
    for i in 0..truth.len() {
        let want = if mask[i] && own[i / 8] { guess[i] } else { truth[i] };
        assert_eq!(read[i], want, "position {i}");
    }

    let device = Device::flex();
    for (input, share) in [(true, 1.5), (true, -0.1), (false, 0.5)] {
        let mut bad = tiny(DynamicsKind::MASKGIT);
        let settings = bad.maskgit_mut().unwrap();
        (settings.previous_frame_input, settings.previous_frame_own_share) = (input, share);
        let err = bad.init(11, 4, &device).unwrap_err().to_string();
        assert!(err.contains("previous_frame_own_share"), "{err}");
    }
}

/// A `[model]` section read as a run config reads it: TOML over the defaults, with overrides.
fn resolve(toml: &str, sets: &[&str]) -> Result<DynamicsConfig, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    jinn_train::config::from_str::<crate::DynamicsRunConfig>(toml, "test.toml", &sets)
        .map(|c| c.model)
        .map_err(|e| e.to_string())
}

#[test]
fn each_kind_reads_only_its_own_settings() {
    // Every kind resolves over the (MaskGIT) defaults and keeps only its own fields.
    for kind in DynamicsKind::all() {
        let cfg = resolve(&format!("[model]\nkind = \"{kind}\"\nmodel_dim = 64"), &[]).unwrap();
        assert_eq!(cfg, DynamicsConfig { model_dim: 64, ..DynamicsConfig::default_for(kind) });
        let stored = jinn_train::config::to_json(&cfg);
        let keys: Vec<&str> = stored.as_object().unwrap().keys().map(String::as_str).collect();
        // MaskGIT's own keys; causal's are its token settings, diffusion's `denoise_steps`.
        let maskgit = [
            "mask_limit",
            "mask_ratio_per_frame",
            "previous_frame_input",
            "previous_frame_depth",
            "previous_frame_radius",
            "previous_frame_own_share",
            "z_loss_weight",
            "changed_token_weight",
            "reversible",
        ];
        let own: &[&str] = match kind.name() {
            "maskgit" => &maskgit,
            "causal" => &maskgit[6..],
            _ => &["denoise_steps"],
        };
        for key in maskgit.into_iter().chain(["denoise_steps"]) {
            assert_eq!(keys.contains(&key), own.contains(&key), "{kind}: {key} in {keys:?}");
        }
        // The stored config reads back as itself.
        assert_eq!(serde_json::from_value::<DynamicsConfig>(stored).unwrap(), cfg);
    }
    // A setting of another kind is refused by name, in a file and through --set.
    let cases = [
        ("causal", "mask_limit = 0.3"),
        ("causal", "previous_frame_input = true"),
        ("causal", "previous_frame_depth = 2"),
        ("causal", "previous_frame_radius = 1"),
        ("causal", "previous_frame_own_share = 0.5"),
        ("diffusion", "mask_ratio_per_frame = true"),
        ("diffusion", "changed_token_weight = 2.0"),
        ("diffusion", "reversible = true"),
        ("maskgit", "denoise_steps = 8"),
    ];
    for (kind, line) in cases {
        let field = line.split(' ').next().unwrap();
        let err = resolve(&format!("[model]\nkind = \"{kind}\"\n{line}"), &[]).unwrap_err();
        assert!(
            err.contains(field) && err.contains(&format!("`{kind}` dynamics model does not use it")),
            "{err}"
        );
    }
    let demo = "[model]\nkind = \"maskgit\"\nprevious_frame_input = true";
    let err = resolve(demo, &["model.kind=causal"]).unwrap_err();
    assert!(err.contains("previous_frame_input"), "{err}");
    // A misspelt key names the kind's own fields.
    let err = resolve("[model]\nkind = \"causal\"\nz_los_weight = 0.1", &[]).unwrap_err();
    assert!(err.contains("unknown field `z_los_weight`") && err.contains("z_loss_weight"), "{err}");
    // Values of the kind's own fields are typed.
    let err = resolve("[model]\nkind = \"diffusion\"\ndenoise_steps = \"many\"", &[]).unwrap_err();
    assert!(err.contains("a `diffusion` dynamics model config") && err.contains("invalid type"), "{err}");
    let err = resolve("[model]\nkind = \"causal\"\nmodel_dim = \"wide\"", &[]).unwrap_err();
    assert!(err.contains("`model_dim`: invalid type"), "{err}");
}

#[test]
fn configs_stored_with_every_kinds_fields_still_load() {
    // Checkpoints written before the kinds had configs of their own store every field, each
    // other kind's at its default.
    let flat = |kind: &str| {
        serde_json::json!({
            "kind": kind, "model_dim": 16, "ffn_dim": 32, "num_heads": 2, "num_blocks": 1,
            "mask_limit": 0.5, "z_loss_weight": 0.0, "action_dim": 4, "reversible": false,
            "denoise_steps": 64, "lam_code_embedding": true, "changed_token_weight": 1.0,
            "previous_frame_input": false,
        })
    };
    for kind in DynamicsKind::all() {
        let cfg: DynamicsConfig = serde_json::from_value(flat(&kind.to_string())).unwrap();
        let want = DynamicsConfig {
            model_dim: 16,
            ffn_dim: 32,
            num_heads: 2,
            num_blocks: 1,
            action_dim: 4,
            lam_code_embedding: true,
            ..DynamicsConfig::default_for(kind)
        };
        assert_eq!(cfg, want, "{kind}");
    }
    // Where such a stored field is not its default, it is an error, not silently dropped.
    let mut causal = flat("causal");
    causal["mask_limit"] = serde_json::json!(0.25);
    let err = serde_json::from_value::<DynamicsConfig>(causal).unwrap_err().to_string();
    assert!(err.contains("mask_limit"), "{err}");
}

#[test]
fn the_builders_take_only_their_own_kinds() {
    let device = Device::flex();
    let diffusion = DynamicsConfig::default_for(DynamicsKind::DIFFUSION);
    assert!(diffusion
        .init(11, 4, &device)
        .unwrap_err()
        .to_string()
        .contains("do not predict tokenizer codes"));
    let causal = tiny(DynamicsKind::CAUSAL);
    assert!(causal.init_diffusion(6, 4, &device).unwrap_err().to_string().contains("kind"));
}
