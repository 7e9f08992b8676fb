use super::*;
use crate::tokenizer::tests::tiny_coder;
use burn::optim::GradientsParams;
use burn::tensor::TensorData;
use jinn_data::rng::SampleStreams;
use jinn_train::optim::OptimConfig;

/// 16×16×3 frames, patch 4 (N = 16, P = 48), width 16.
pub(crate) fn tiny() -> LamConfig {
    LamConfig {
        coder: tiny_coder(),
        num_codes: 4,
        codebook_dropout: 0.0,
        vq_beta: 0.25,
        reset_threshold: 50,
        reset_to: ResetTarget::EncoderOutput,
        encoder_frame_difference: false,
        decoder_residual: false,
        code_assignment: CodeAssignment::Nearest,
    }
}

/// Parameters of an axial transformer `I → M → O` (Jasmine's `AxialTransformer`): two input
/// LayerNorms, the input and output projections, and per block three LayerNorms, two attentions of four
/// projections each and the FFN.
fn axial_params(i: usize, m: usize, d: usize, o: usize, blocks: usize) -> usize {
    let block = 3 * 2 * m + 2 * 4 * (m * m + m) + (m * d + d) + (d * m + m);
    2 * i + (i * m + m) + 2 * m + blocks * block + (m * o + o)
}

/// Jasmine's LAM (`LatentActionModel`): action token `P`, encoder `P → L`, codebook `K×L`,
/// `patch_up` `P → M`, `action_up` `L → M`, decoder `M → P`.
/// With `encoder_frame_difference` the action token and the encoder input are `2P` wide.
fn jasmine_lam_params(lam: &LamConfig) -> usize {
    let c = &lam.coder;
    let p = c.patch * c.patch * c.channels;
    let p_in = if lam.encoder_frame_difference { 2 * p } else { p };
    let (m, d, l) = (c.model_dim, c.ffn_dim, c.latent_dim);
    p_in + axial_params(p_in, m, d, l, c.encoder_blocks)
        + lam.num_codes * l
        + (p * m + m)
        + (l * m + m)
        + axial_params(m, m, d, p, c.decoder_blocks)
}

#[test]
fn parameter_count_matches_jasmine() {
    let device = Device::flex();
    let with_difference = LamConfig { encoder_frame_difference: true, ..tiny() };
    for cfg in [tiny(), with_difference, LamConfig::default()] {
        assert_eq!(cfg.init(&device).unwrap().num_params(), jasmine_lam_params(&cfg), "{cfg:?}");
    }
    // Jasmine's own parameter count at its defaults.
    assert_eq!(jasmine_lam_params(&LamConfig::default()), 35_115_232);
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

#[test]
fn action_of_a_transition_depends_only_on_frames_up_to_it() {
    action_sees_only_frames_up_to_it(tiny());
    action_sees_only_frames_up_to_it(LamConfig { encoder_frame_difference: true, ..tiny() });
}

fn action_sees_only_frames_up_to_it(cfg: LamConfig) {
    let device = Device::flex();
    let lam = cfg.init(&device).unwrap();
    let (b, t) = (2, 4);
    let x = Tensor::<5>::random([b, t, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let (out, _, dims) = lam.vq_encode(x.clone(), None).unwrap();
    assert_eq!(dims, [b, t - 1]);
    let before = floats(out.emb.reshape([b, t - 1, 8]));
    // Change frame 2: the actions into frames 1 (from frames 0..1) must not change.
    let noise = Tensor::<5>::random([b, 1, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let x2 = x.slice_assign([0..b, 2..3, 0..16, 0..16, 0..3], noise);
    let (out2, _, _) = lam.vq_encode(x2, None).unwrap();
    let after = floats(out2.emb.reshape([b, t - 1, 8]));
    for bi in 0..b {
        let row = |v: &[f32], k: usize| v[(bi * (t - 1) + k) * 8..(bi * (t - 1) + k + 1) * 8].to_vec();
        assert_eq!(row(&before, 0), row(&after, 0), "action into frame 1 saw frame 2");
        assert_ne!(row(&before, 1), row(&after, 1), "action into frame 2 ignored frame 2");
    }
    let eval = lam.forward_eval(Tensor::<5>::zeros([b, t, 16, 16, 3], &device)).unwrap();
    assert_eq!(eval.recon.dims(), [b, t - 1, 16, 16, 3]);
    assert_eq!(eval.indices.dims(), [b * (t - 1)]);
}

/// The encoder input with `encoder_frame_difference`, built on the host: every patch followed
/// by its change from the same patch of the previous frame (none for frame 0), after the
/// action token. Feeding it to the encoder directly must give `vq_encode`'s latents.
#[test]
fn frame_difference_input_matches_a_reference_built_on_the_host() {
    let device = Device::flex();
    let lam = LamConfig { encoder_frame_difference: true, ..tiny() }.init(&device).unwrap();
    let (b, t, n, p) = (2, 3, 16, 48);
    let x = Tensor::<5>::random([b, t, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let patches = floats(patchify(x.clone(), 4).unwrap()); // [b, t, n, p]
    let token = floats(lam.action_in.val()); // [2p]
    let mut input = Vec::with_capacity(b * t * (n + 1) * 2 * p);
    for bi in 0..b {
        for ti in 0..t {
            input.extend_from_slice(&token);
            for ni in 0..n {
                let at = |tt: usize| ((bi * t + tt) * n + ni) * p;
                let now = &patches[at(ti)..at(ti) + p];
                let before = &patches[at(ti.saturating_sub(1))..at(ti.saturating_sub(1)) + p];
                input.extend_from_slice(now);
                input.extend(now.iter().zip(before).map(|(a, c)| a - c));
            }
        }
    }
    let input = Tensor::<4>::from_data(TensorData::new(input, [b, t, n + 1, 2 * p]), &device);
    let latents = lam.encoder.forward(input); // [b, t, n+1, l]
    let want = floats(latents.slice([0..b, 1..t, 0..1, 0..8]).reshape([b * (t - 1), 8]));
    let (out, _, _) = lam.vq_encode(x, None).unwrap();
    let got = floats(out.emb); // rows L2-normalised by the quantiser
    assert_eq!(got.len(), want.len());
    for (g_row, w_row) in got.chunks(8).zip(want.chunks(8)) {
        let norm = w_row.iter().map(|v| v * v).sum::<f32>().sqrt();
        for (g, w) in g_row.iter().zip(w_row) {
            assert!((g - w / norm).abs() < 1e-4, "{g} vs {}", w / norm);
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let device = Device::flex();
    let lam = tiny().init(&device).unwrap();
    let one_frame = Tensor::<5>::zeros([1, 1, 16, 16, 3], &device);
    assert!(lam.forward_eval(one_frame).unwrap_err().to_string().contains("T ≥ 2"));
    let wrong = Tensor::<5>::zeros([1, 2, 8, 16, 3], &device);
    assert!(lam.forward_eval(wrong).unwrap_err().to_string().contains("16×16×3"));
    let dropout =
        LamConfig { code_assignment: CodeAssignment::Reconstruction, codebook_dropout: 0.1, ..tiny() };
    let err = dropout.init(&device).unwrap_err().to_string();
    assert!(err.contains("codebook_dropout") && err.contains("reconstruction"), "{err}");
    let encoder_only = tiny().init_encoder(&device).unwrap();
    let x = Tensor::<5>::zeros([1, 2, 16, 16, 3], &device);
    assert!(encoder_only.forward_eval(x.clone()).unwrap_err().to_string().contains("decoder"));
    assert_eq!(encoder_only.latent_actions(x).unwrap().dims(), [1, 1, 8]);
}

/// Clips of a bright 4×4 square moving by one patch per frame in one of two directions.
pub(crate) fn moving_square(b: usize, t: usize) -> Vec<u8> {
    let mut v = vec![20u8; b * t * 16 * 16 * 3];
    for bi in 0..b {
        for ti in 0..t {
            let col = if bi % 2 == 0 { ti } else { 3 - ti % 4 };
            for y in 4..8 {
                for x in col * 4..col * 4 + 4 {
                    let at = (((bi * t + ti) * 16 + y) * 16 + x) * 3;
                    v[at..at + 3].copy_from_slice(&[240, 200, 60]);
                }
            }
        }
    }
    v
}

#[test]
fn overfits_one_small_batch() {
    let device = Device::flex().autodiff();
    device.seed(3);
    let lam = tiny().init(&device).unwrap();
    let x = crate::frames_to_unit(&moving_square(2, 4), [2, 4, 16, 16, 3], &device);
    let (first, last) = first_and_last_loss(lam, x, 80);
    eprintln!("LAM overfit: loss {first} → {last}");
    assert!(last * 5.0 <= first, "loss {first} → {last}: less than a 5× drop");
}

/// Trains `lam` on the one batch `x` for `steps` AdamW steps (lr 3e-3); the first and last loss.
fn first_and_last_loss(mut lam: Lam, x: Tensor<5>, steps: u64) -> (f32, f32) {
    let mut optim = OptimConfig::default().init().unwrap();
    let mut losses = Vec::new();
    for step in 0..steps {
        let streams = SampleStreams::new(0, "test", step, x.dims()[0]);
        let out = lam.forward_train(x.clone(), &streams).unwrap();
        losses.push(out.loss.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads(out.loss.backward(), &lam);
        lam = optim.step(3e-3, lam, grads);
    }
    (losses[0], *losses.last().unwrap())
}

/// With `decoder_residual` the untrained decoder (zero output layer) predicts every frame as
/// the previous one (clamped to `[LOGIT_CLAMP, 1 − LOGIT_CLAMP]`, checked against a host copy,
/// with a black and a white pixel in every frame so the clamp matters); training
/// still moves the prediction and overfits a small batch like the plain decoder does.
#[test]
fn residual_decoder_starts_as_a_copy_of_the_previous_frame() {
    let device = Device::flex().autodiff();
    device.seed(4);
    let cfg = LamConfig { decoder_residual: true, ..tiny() };
    let lam = cfg.init(&device).unwrap();
    assert_eq!(lam.num_params(), jasmine_lam_params(&cfg));
    let (b, t) = (2, 4);
    let mut frames = moving_square(b, t);
    for frame in frames.chunks_mut(16 * 16 * 3) {
        frame[..3].fill(0); // a black pixel
        frame[3..6].fill(255); // a white pixel
    }
    let x = crate::frames_to_unit(&frames, [b, t, 16, 16, 3], &device);
    let recon = floats(lam.forward_eval(x.clone()).unwrap().recon); // [b, t−1, 16, 16, 3]
    let fb = 16 * 16 * 3;
    for bi in 0..b {
        for ti in 1..t {
            let got = &recon[(bi * (t - 1) + ti - 1) * fb..(bi * (t - 1) + ti) * fb];
            let previous = &frames[(bi * t + ti - 1) * fb..(bi * t + ti) * fb];
            for (g, &v) in got.iter().zip(previous) {
                let clamp = LOGIT_CLAMP as f32;
                let want = (v as f32 / 255.0).clamp(clamp, 1.0 - clamp);
                assert!((g - want).abs() < 1e-5, "clip {bi} frame {ti}: {g} vs {want}");
            }
        }
    }
    let (first, last) = first_and_last_loss(lam, x, 80);
    assert!(last * 5.0 <= first, "residual LAM loss {first} → {last}: less than a 5× drop");
}

fn ints(t: Tensor<1, burn::tensor::Int>) -> Vec<i64> {
    t.try_into_vec_as::<i64>().unwrap()
}

/// `best_codes` (one decoder pass over a batch `K` times as large) against a loop that runs the
/// decoder once per code on the plain batch and sums each transition's squared error on the
/// host in f64: the chosen code's error is the least (up to float rounding). An untrained
/// residual decoder predicts the same for every code, and ties go to code 0.
#[test]
fn hindsight_code_has_the_least_error_of_all_codes() {
    let device = Device::flex();
    device.seed(5);
    let (b, t, k, l) = (2, 4, 4, 8);
    for residual in [false, true] {
        let cfg = LamConfig {
            code_assignment: CodeAssignment::Reconstruction,
            decoder_residual: residual,
            ..tiny()
        };
        let lam = cfg.init(&device).unwrap();
        let decoder = lam.decoder.as_ref().unwrap();
        let x = Tensor::<5>::random([b, t, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
        let patches = patchify(x, 4).unwrap(); // [b, t, n, p]
        let [_, _, n, p] = patches.dims();
        let context = patches.clone().slice([0..b, 0..t - 1, 0..n, 0..p]); // [b, t−1, n, p]
        let target = patches.slice([0..b, 1..t, 0..n, 0..p]); // [b, t−1, n, p]
        let frames_in = linear_rows(&decoder.patch_up, context.clone()); // [b, t−1, n, m]
        let got = ints(lam.best_codes(decoder, frames_in.clone(), context.clone(), target.clone()));
        if residual {
            assert_eq!(got, vec![0; b * (t - 1)], "ties go to code 0");
            continue;
        }
        let want = floats(target);
        let mut errors = vec![vec![0f64; k]; b * (t - 1)];
        for (code, column) in (0..k).zip(0..) {
            let row = lam.vq.codebook.val().slice([code..code + 1, 0..l]); // [1, l]
            let action = row.reshape([1, 1, 1, l]).repeat(&[b, t - 1, 1, 1]); // [b, t−1, 1, l]
            let x = frames_in.clone() + linear_rows(&decoder.action_up, action); // [b, t−1, n, m]
            let pred = floats(sigmoid(decoder.transformer.forward(x))); // [b, t−1, n, p]
            for (i, (pc, tc)) in pred.chunks(n * p).zip(want.chunks(n * p)).enumerate() {
                errors[i][column] = pc.iter().zip(tc).map(|(a, c)| (*a as f64 - *c as f64).powi(2)).sum();
            }
        }
        for (i, e) in errors.iter().enumerate() {
            let chosen = e[got[i] as usize];
            assert!(
                e.iter().all(|&v| chosen <= v * (1.0 + 1e-5)),
                "transition {i}: chose {} of {e:?}",
                got[i]
            );
        }
    }
}

/// Training with reconstruction assignment: the decoder trains on the hindsight codes, the
/// loss is `mse` plus the encoder's cross-entropy against them (checked against a host
/// computation in f64), no commitment term, and gradients reach the encoder, the codebook
/// and the decoder; evaluation names the encoder's nearest codes and still reports the
/// hindsight ones.
#[test]
fn reconstruction_assignment_trains_on_hindsight_codes() {
    let device = Device::flex().autodiff();
    device.seed(6);
    let (b, t, l) = (2, 4, 8);
    let lam = LamConfig { code_assignment: CodeAssignment::Reconstruction, ..tiny() }.init(&device).unwrap();
    let x = Tensor::<5>::random([b, t, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let out = lam.forward_train(x.clone(), &SampleStreams::new(0, "test", 0, b)).unwrap();
    let eval = lam.forward_eval(x.clone()).unwrap();
    let hindsight = ints(out.hindsight.clone().unwrap());
    assert_eq!(ints(out.indices.clone()), hindsight);
    assert_eq!(ints(eval.hindsight.unwrap()), hindsight);
    let (nearest, _, _) = lam.vq_encode(x, None).unwrap();
    assert_eq!(ints(eval.indices), ints(nearest.indices));
    assert_eq!(out.commitment.clone().into_scalar::<f32>(), 0.0);

    // Host cross-entropy of cosine similarities over the temperature.
    let emb = floats(out.emb.clone()); // [d, l], rows normalised
    let codes = floats(lam.vq.codebook.val()); // [k, l]
    let unit = |r: &[f32]| {
        let norm = r.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
        r.iter().map(|&v| v as f64 / norm).collect::<Vec<f64>>()
    };
    let codes: Vec<Vec<f64>> = codes.chunks(l).map(unit).collect();
    let mut ce = 0.0;
    for (row, &assigned) in emb.chunks(l).zip(&hindsight) {
        let e = unit(row);
        let logits: Vec<f64> = codes
            .iter()
            .map(|c| c.iter().zip(&e).map(|(a, b)| a * b).sum::<f64>() / ASSIGNMENT_TEMPERATURE)
            .collect();
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + logits.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        ce += lse - logits[assigned as usize];
    }
    ce /= hindsight.len() as f64;
    let q_loss = out.q_loss.clone().into_scalar::<f32>() as f64;
    assert!((q_loss - ce).abs() < 1e-4, "{q_loss} vs {ce}");
    let (mse, loss) = (out.mse.clone().into_scalar::<f32>(), out.loss.clone().into_scalar::<f32>());
    assert!((loss as f64 - mse as f64 - ce).abs() < 1e-4);

    let grads = out.loss.backward();
    let norm = |g: Option<Tensor<2>>| floats(g.expect("gradient")).iter().map(|v| v.abs()).sum::<f32>();
    assert!(norm(lam.vq.codebook.val().grad(&grads)) > 0.0, "codebook");
    assert!(norm(lam.encoder.proj_out.weight.val().grad(&grads)) > 0.0, "encoder");
    let decoder = lam.decoder.as_ref().unwrap();
    assert!(norm(decoder.action_up.weight.val().grad(&grads)) > 0.0, "decoder action projection");
}

/// Two-frame clips of a square that moves one patch right (even clips) or left (odd clips)
/// from the middle: the decoder sees only the first frame, so the direction must come from the
/// code. Reconstruction assignment (with the residual decoder and dead-code resets, as the demo
/// trains) learns one code per direction and the encoder names it.
#[test]
fn reconstruction_assignment_separates_two_directions() {
    let device = Device::flex().autodiff();
    device.seed(7);
    let b = 4;
    let mut frames = vec![20u8; b * 2 * 16 * 16 * 3];
    for bi in 0..b {
        for (ti, col) in [1usize, if bi % 2 == 0 { 2 } else { 0 }].into_iter().enumerate() {
            for y in 4..8 {
                for x in col * 4..col * 4 + 4 {
                    let at = (((bi * 2 + ti) * 16 + y) * 16 + x) * 3;
                    frames[at..at + 3].copy_from_slice(&[240, 200, 60]);
                }
            }
        }
    }
    let kc = 2;
    let cfg = LamConfig {
        code_assignment: CodeAssignment::Reconstruction,
        num_codes: kc,
        decoder_residual: true,
        ..tiny()
    };
    let mut lam = cfg.init(&device).unwrap();
    let x = crate::frames_to_unit(&frames, [b, 2, 16, 16, 3], &device);
    let mut optim = OptimConfig::default().init().unwrap();
    // As in training (`LamTask`): a code unused for a few steps moves onto an encoder output.
    let mut tracker = jinn_nn::DeadCodeTracker::new(kc, 5);
    for step in 0..300 {
        let mut rng = jinn_data::rng::rng_for(0, "test-reset", step);
        let out = lam.forward_train(x.clone(), &SampleStreams::new(0, "test", step, b)).unwrap();
        let usage = jinn_nn::CodeUsage::from_indices(out.indices.clone(), kc).unwrap();
        let grads = GradientsParams::from_grads(out.loss.backward(), &lam);
        lam = optim.step(3e-3, lam, grads);
        let resets = tracker.step(&usage, &mut rng).unwrap();
        lam.vq = lam.vq.clone().apply_resets(&resets, ResetTarget::EncoderOutput, out.emb, &mut rng).unwrap();
    }
    let eval = lam.forward_eval(x).unwrap();
    let codes = ints(eval.indices); // [b]
    assert_eq!(ints(eval.hindsight.unwrap()), codes, "the encoder names the hindsight codes");
    assert_ne!(codes[0], codes[1], "codes {codes:?}");
    assert_eq!(codes, [codes[0], codes[1], codes[0], codes[1]], "codes {codes:?}");
}

#[test]
fn config_reads_its_flat_section_and_refuses_unknown_keys() {
    // The section as checkpoints and config files hold it: the frame/coder keys beside the LAM's.
    let cfg = LamConfig { num_codes: 5, encoder_frame_difference: true, ..tiny() };
    let json = serde_json::to_value(&cfg).unwrap();
    assert_eq!(json["patch"], 4, "coder keys are flat: {json}");
    assert_eq!(json["num_codes"], 5);
    assert_eq!(serde_json::from_value::<LamConfig>(json.clone()).unwrap(), cfg);
    let partial: LamConfig = serde_json::from_value(serde_json::json!({"patch": 8, "num_codes": 3})).unwrap();
    assert_eq!((partial.coder.patch, partial.num_codes, partial.coder.model_dim), (8, 3, 512));
    let mut bad = json;
    bad["num_code"] = 3.into();
    let err = serde_json::from_value::<LamConfig>(bad).unwrap_err().to_string();
    assert!(err.contains("unknown field `num_code`") && err.contains("num_codes"), "{err}");
}
