use super::*;
use burn::optim::GradientsParams;
use burn::tensor::TensorData;
use jinn_train::optim::OptimConfig;

/// 16×16×3 frames, patch 4 (N = 16, P = 48), width 16.
pub(crate) fn tiny() -> LamConfig {
    LamConfig {
        height: 16,
        width: 16,
        channels: 3,
        patch: 4,
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        encoder_blocks: 1,
        decoder_blocks: 1,
        latent_dim: 8,
        num_codes: 4,
        codebook_dropout: 0.0,
        vq_beta: 0.25,
        reset_threshold: 50,
        reset_to: ResetTarget::EncoderOutput,
        encoder_frame_difference: false,
        decoder_residual: false,
    }
}

/// Parameters of an axial transformer `I → M → O` (spec §1.4): two input LayerNorms, the
/// input and output projections, and per block three LayerNorms, two attentions of four
/// projections each and the FFN.
fn axial_params(i: usize, m: usize, d: usize, o: usize, blocks: usize) -> usize {
    let block = 3 * 2 * m + 2 * 4 * (m * m + m) + (m * d + d) + (d * m + m);
    2 * i + (i * m + m) + 2 * m + blocks * block + (m * o + o)
}

/// Jasmine's LAM (spec §2.3): action token `P`, encoder `P → L`, codebook `K×L`,
/// `patch_up` `P → M`, `action_up` `L → M`, decoder `M → P`.
/// With `encoder_frame_difference` the action token and the encoder input are `2P` wide.
fn jasmine_lam_params(c: &LamConfig) -> usize {
    let p = c.patch * c.patch * c.channels;
    let p_in = if c.encoder_frame_difference { 2 * p } else { p };
    let (m, d, l) = (c.model_dim, c.ffn_dim, c.latent_dim);
    p_in + axial_params(p_in, m, d, l, c.encoder_blocks)
        + c.num_codes * l
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
    // The spec's figure, verified on Jasmine itself (§1.8).
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
fn frame_difference_input_matches_a_host_reference() {
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
        let mut rng = jinn_data::rng::rng_for(0, "test", step);
        let out = lam.forward_train(x.clone(), &mut rng).unwrap();
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
