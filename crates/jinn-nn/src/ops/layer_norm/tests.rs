use super::*;
use burn::module::Param;
use burn::tensor::{Device, Distribution, TensorData, Tolerance};

use crate::init;

/// A norm over `d` features with a scale and shift away from the 1 / 0 initialisation.
fn trained_norm(d: usize, device: &Device) -> LayerNorm {
    let mut norm = init::layer_norm(d, device);
    norm.gamma = Param::from_tensor(Tensor::random([d], Distribution::Uniform(0.5, 1.5), device));
    norm.beta = Some(Param::from_tensor(Tensor::random([d], Distribution::Uniform(-0.5, 0.5), device)));
    norm
}

/// Forward value and the gradients of `Σ w·LN(x)` for `x`, γ and β, by `f`.
fn value_and_grads(
    norm: &LayerNorm,
    x: &Tensor<3>,
    w: &Tensor<3>,
    f: impl Fn(&LayerNorm, Tensor<3>) -> Tensor<3>,
) -> [TensorData; 4] {
    let x = x.clone().detach().require_grad();
    let y = f(norm, x.clone());
    let grads = (y.clone() * w.clone()).sum().backward();
    let beta = norm.beta.as_ref().unwrap().val();
    [
        y.into_data(),
        x.grad(&grads).unwrap().into_data(),
        norm.gamma.val().grad(&grads).unwrap().into_data(),
        beta.grad(&grads).unwrap().into_data(),
    ]
}

/// The door on the CPU (the fused kernel) against its Burn path (`LayerNorm::forward`, Burn's
/// composite under autodiff), value and every gradient, on `view(x)` for `x` of
/// `shape` with `d` features after the view.
fn assert_matches_burn(d: usize, shape: [usize; 3], view: impl Fn(Tensor<3>) -> Tensor<3> + Copy) {
    let device = Device::flex().autodiff();
    let norm = trained_norm(d, &device);
    let x = Tensor::<3>::random(shape, Distribution::Normal(0.3, 2.0), &device);
    let w = view(Tensor::<3>::random(shape, Distribution::Normal(0.0, 1.0), &device));
    let fused = value_and_grads(&norm, &x, &w, |n, x| layer_norm(n, view(x)));
    let reference = value_and_grads(&norm, &x, &w, |n, x| n.forward(view(x)));
    for (a, b) in fused.iter().zip(&reference) {
        a.assert_approx_eq::<f32>(b, Tolerance::absolute(2e-4));
    }
}

#[test]
fn fused_value_and_gradients_match_burns_layer_norm() {
    // 210 rows: four rayon tasks, the last one partial.
    assert_matches_burn(20, [3, 70, 20], |x| x);
}

#[test]
fn a_strided_input_matches_burns_layer_norm() {
    // [2, 12, 9] viewed as [2, 9, 12]: the features are strided.
    assert_matches_burn(12, [2, 12, 9], |x| x.swap_dims(1, 2));
}

#[test]
fn the_epsilon_of_a_jinn_layer_norm_is_read_back() {
    let device = Device::flex();
    assert_eq!(display_epsilon(&init::layer_norm(8, &device)), Some(LAYER_NORM_EPS));
    let other = burn::nn::LayerNormConfig::new(8).with_epsilon(1e-5).init(&device);
    assert_eq!(display_epsilon(&other), Some(1e-5));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "built by init::layer_norm")]
fn a_layer_norm_with_another_epsilon_is_refused() {
    let device = Device::flex();
    let other = burn::nn::LayerNormConfig::new(8).with_epsilon(1e-5).init(&device);
    layer_norm(&other, Tensor::<2>::zeros([2, 8], &device));
}

#[test]
fn the_untracked_kernel_matches_burns_layer_norm() {
    let device = Device::flex();
    let norm = trained_norm(16, &device);
    let x = Tensor::<3>::random([4, 5, 16], Distribution::Normal(1.0, 3.0), &device);
    layer_norm(&norm, x.clone())
        .into_data()
        .assert_approx_eq::<f32>(&norm.forward(x).into_data(), Tolerance::absolute(1e-5));
}
