use super::super::{CoderConfig, VqConfig};
use crate::grad_check::assert_grads_close;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor};
use jinn_data::rng::SampleStreams;

/// 16×16×3 frames, patch 4, width 16, two blocks on each side, codebook dropout on.
fn tiny() -> VqConfig {
    VqConfig {
        coder: CoderConfig { encoder_blocks: 2, decoder_blocks: 2, ..crate::tokenizer::tests::tiny_coder() },
        num_codes: 16,
        codebook_dropout: 0.2,
        vq_beta: 0.25,
        reset_threshold: 0,
        remat: true,
    }
}

#[test]
fn recomputed_gradients_equal_standard_autodiff() {
    let device = Device::flex().autodiff();
    device.seed(3);
    let model = tiny().init(&device).unwrap();
    let videos = Tensor::<5>::random([2, 3, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let divisor = 2.0;

    let out = model.forward_train(videos.clone(), &SampleStreams::new(7, "codebook-dropout", 0, 2)).unwrap();
    let reference = GradientsParams::from_grads(out.loss.clone().div_scalar(divisor).backward(), &model);
    let (remat_out, remat) = model
        .forward_backward_remat(videos, &SampleStreams::new(7, "codebook-dropout", 0, 2), divisor)
        .unwrap();

    let loss = |t: Tensor<1>| t.into_scalar::<f32>();
    // Equal up to float reassociation: the flex backend's threaded kernels may split a reduction
    // differently when other tests load the machine, so this is not a bit-for-bit comparison.
    let (plain, recomputed) = (loss(out.loss), loss(remat_out.loss));
    assert!(
        (plain - recomputed).abs() <= 1e-6 * plain.abs().max(1.0),
        "same forward: {plain} vs {recomputed}"
    );
    assert_grads_close(&model, &reference, &remat, 1e-5, false, "remat");
}

#[test]
fn plain_device_is_a_clear_error() {
    let device = Device::flex();
    let model = tiny().init(&device).unwrap();
    let videos = Tensor::<5>::zeros([1, 2, 16, 16, 3], &device);
    let err = model.forward_backward_remat(videos, &SampleStreams::new(0, "x", 0, 1), 1.0).unwrap_err();
    assert!(err.to_string().contains("autodiff"), "{err}");
}
