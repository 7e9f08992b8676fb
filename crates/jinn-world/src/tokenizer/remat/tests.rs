use super::super::TokenizerConfig;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor};
use jinn_data::rng::rng_for;

/// 16×16×3 frames, patch 4, width 16, two blocks on each side, codebook dropout on.
fn tiny() -> TokenizerConfig {
    TokenizerConfig {
        height: 16,
        width: 16,
        channels: 3,
        patch: 4,
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        encoder_blocks: 2,
        decoder_blocks: 2,
        latent_dim: 8,
        num_codes: 16,
        codebook_dropout: 0.2,
        vq_beta: 0.25,
        reset_threshold: 0,
        remat: true,
    }
}

/// Every parameter's gradient in `a` and `b`, flattened, in visiting order.
struct Pairs<'a> {
    a: &'a GradientsParams,
    b: &'a GradientsParams,
    out: Vec<(Vec<f32>, Vec<f32>)>,
}

impl ModuleVisitor for Pairs<'_> {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        let flat = |g: &GradientsParams| {
            g.get::<D>(p.id)
                .map(|t| t.try_into_vec_as::<f32>().unwrap())
                .expect("a gradient for every parameter")
        };
        self.out.push((flat(self.a), flat(self.b)));
    }
}

#[test]
fn recomputed_gradients_equal_standard_autodiff() {
    let device = Device::flex().autodiff();
    device.seed(3);
    let model = tiny().init(&device).unwrap();
    let videos = Tensor::<5>::random([2, 3, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let divisor = 2.0;

    let out = model.forward_train(videos.clone(), &mut rng_for(7, "codebook-dropout", 0)).unwrap();
    let reference = GradientsParams::from_grads(out.loss.clone().div_scalar(divisor).backward(), &model);
    let (remat_out, remat) =
        model.forward_backward_remat(videos, &mut rng_for(7, "codebook-dropout", 0), divisor).unwrap();

    let loss = |t: Tensor<1>| t.into_scalar::<f32>();
    // Equal up to float reassociation: the flex backend's threaded kernels may split a reduction
    // differently when other tests load the machine, so this is not a bit-for-bit comparison.
    let (plain, recomputed) = (loss(out.loss), loss(remat_out.loss));
    assert!(
        (plain - recomputed).abs() <= 1e-6 * plain.abs().max(1.0),
        "same forward: {plain} vs {recomputed}"
    );
    let mut pairs = Pairs { a: &reference, b: &remat, out: Vec::new() };
    model.visit(&mut pairs);
    assert_eq!(pairs.out.len(), reference.len(), "every gradient is a parameter's");
    assert_eq!(reference.len(), remat.len());
    let max_abs = |v: &[f32]| v.iter().fold(0f32, |a, x| a.max(x.abs()));
    let global = pairs.out.iter().map(|(r, _)| max_abs(r)).fold(0f32, f32::max);
    assert!(global > 0.0, "the loss has gradients");
    for (i, (r, m)) in pairs.out.iter().enumerate() {
        // Relative per parameter, with a floor for the ones whose exact gradient is ~0 (the
        // attention key biases: softmax ignores a shift of every score).
        let scale = max_abs(r).max(1e-3 * global);
        let diff = r.iter().zip(m).fold(0f32, |a, (x, y)| a.max((x - y).abs()));
        assert!(diff <= 1e-5 * scale, "parameter {i}: max diff {diff} vs scale {scale}");
    }
}

#[test]
fn plain_device_is_a_clear_error() {
    let device = Device::flex();
    let model = tiny().init(&device).unwrap();
    let videos = Tensor::<5>::zeros([1, 2, 16, 16, 3], &device);
    let err = model.forward_backward_remat(videos, &mut rng_for(0, "x", 0), 1.0).unwrap_err();
    assert!(err.to_string().contains("autodiff"), "{err}");
}
