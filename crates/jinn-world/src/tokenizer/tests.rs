use super::*;
use burn::optim::GradientsParams;
use burn::tensor::Distribution;
use jinn_data::rng::SampleStreams;
use jinn_train::optim::OptimConfig;

/// 16×16×3 frames, patch 4 (N = 16, P = 48), width 16, FFN 32, 2 heads, one block on each
/// side, latents of 8: the shapes of the tiny test models.
pub(crate) fn tiny_coder() -> CoderConfig {
    CoderConfig {
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
    }
}

/// [`tiny_coder`] at width 32.
fn tiny() -> VqConfig {
    VqConfig {
        coder: CoderConfig { model_dim: 32, ffn_dim: 64, num_heads: 4, ..tiny_coder() },
        num_codes: 64,
        codebook_dropout: 0.0,
        vq_beta: 0.25,
        reset_threshold: 0,
        remat: false,
    }
}

fn ints(t: Tensor<3, Int>) -> Vec<i64> {
    t.try_into_vec_as::<i64>().unwrap()
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

#[test]
fn frames_scale_to_unit_interval() {
    let device = Device::flex();
    let x = frames_to_unit(&[0, 51, 255, 128], [1, 1, 1, 2, 2], &device);
    assert_eq!(floats(x), vec![0.0, 0.2, 1.0, 128.0 / 255.0]);
}

#[test]
fn shapes_and_decode_of_encode_matches_training_reconstruction() {
    let device = Device::flex();
    let model = tiny().init(&device).unwrap();
    let x = Tensor::<5>::random([2, 3, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let idx = model.encode(x.clone()).unwrap();
    assert_eq!(idx.dims(), [2, 3, 16]);
    let recon = model.decode(idx.clone()).unwrap();
    assert_eq!(recon.dims(), [2, 3, 16, 16, 3]);
    let out = model.forward_train(x, &SampleStreams::new(0, "test", 0, 2)).unwrap();
    assert_eq!(out.recon.dims(), [2, 3, 16, 16, 3]);
    // Without dropout the training path picks the same codes and decodes the same frames.
    assert_eq!(ints(out.indices), ints(idx));
    for (a, b) in floats(out.recon).iter().zip(floats(recon)) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
    let loss = out.loss.into_scalar::<f32>();
    let parts = out.mse.into_scalar::<f32>()
        + out.q_loss.into_scalar::<f32>()
        + 0.25 * out.commitment.into_scalar::<f32>();
    assert!((loss - parts).abs() < 1e-6, "{loss} vs {parts}");
}

#[test]
fn wrong_frame_shape_and_token_count_are_errors() {
    let device = Device::flex();
    let model = tiny().init(&device).unwrap();
    let x = Tensor::<5>::zeros([1, 1, 8, 16, 3], &device);
    assert!(model.encode(x).unwrap_err().to_string().contains("16×16×3"));
    let idx = Tensor::<3, Int>::zeros([1, 1, 15], &device);
    assert!(model.decode(idx).is_err());
}

#[test]
fn frame_by_frame_tokens_equal_whole_clip_tokens() {
    let device = Device::flex();
    let model = tiny().init(&device).unwrap();
    let (b, t, n) = (2, 4, 16);
    let x = Tensor::<5>::random([b, t, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let whole = ints(model.encode(x.clone()).unwrap()); // [b, t, n]
    for prefix in 1..=t {
        let part = ints(model.encode(x.clone().slice([0..b, 0..prefix])).unwrap()); // [b, prefix, n]
        for bi in 0..b {
            let got = &part[bi * prefix * n..(bi + 1) * prefix * n];
            let want = &whole[bi * t * n..bi * t * n + prefix * n];
            assert_eq!(got, want, "clip {bi}, frames 0..{prefix}");
        }
    }
    // Decoding is causal too: the reconstruction of early frames ignores later codes.
    let idx = model.encode(x.clone()).unwrap();
    let full = floats(model.decode(idx.clone()).unwrap().slice([0..b, 0..2]));
    let early = floats(model.decode(idx.slice([0..b, 0..2])).unwrap());
    for (a, e) in full.iter().zip(&early) {
        assert!((a - e).abs() < 1e-5);
    }
}

/// Clips whose 4×4 patches are each one of a few solid colours, moving one patch per frame:
/// perfectly representable by a 64-code tokenizer, so the loss can fall far.
fn patch_clips(b: usize, t: usize) -> Vec<u8> {
    let colours = [[250u8, 20, 20], [20, 250, 20], [20, 20, 250], [200, 200, 40], [10, 10, 10]];
    let mut v = Vec::with_capacity(b * t * 16 * 16 * 3);
    for bi in 0..b {
        for ti in 0..t {
            for y in 0..16 {
                for x in 0..16 {
                    let (r, c) = (y / 4, x / 4);
                    let k = (r * 3 + c + ti + 2 * bi) % colours.len();
                    v.extend_from_slice(&colours[k]);
                }
            }
        }
    }
    v
}

#[test]
fn overfits_one_small_batch() {
    let device = Device::flex().autodiff();
    device.seed(11);
    let mut model = tiny().init(&device).unwrap();
    let mut optim = OptimConfig::default().init().unwrap();
    let x = frames_to_unit(&patch_clips(2, 4), [2, 4, 16, 16, 3], &device);
    let mut first = None;
    let mut last = f32::INFINITY;
    for step in 0..150 {
        let out = model.forward_train(x.clone(), &SampleStreams::new(0, "test", step, 2)).unwrap();
        let loss = out.loss.clone().into_scalar::<f32>();
        first.get_or_insert(loss);
        last = loss;
        let grads = GradientsParams::from_grads(out.loss.backward(), &model);
        model = optim.step(3e-3, model, grads);
    }
    let first = first.unwrap();
    eprintln!("overfit: loss {first} → {last}");
    assert!(last * 10.0 <= first, "loss {first} → {last}: less than a 10× drop");
}
