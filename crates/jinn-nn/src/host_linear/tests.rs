use super::*;
use burn::module::Param;
use burn::tensor::{Device, Distribution, Tolerance};

use crate::init;
use crate::test_util::to_vec;

/// A `d_in → d_out` layer with a bias away from zero.
fn layer(d_in: usize, d_out: usize, device: &Device) -> Linear {
    let mut layer = init::linear(d_in, d_out, device);
    layer.bias = Some(Param::from_tensor(Tensor::random([d_out], Distribution::Uniform(-0.5, 0.5), device)));
    layer
}

/// Forward value and the gradients of `loss(f(x))` for `x`, W and b.
fn value_and_grads(
    layer: &Linear,
    x: &Tensor<2>,
    f: impl Fn(&Linear, Tensor<2>) -> Tensor<2>,
    loss: &impl Fn(Tensor<2>) -> Tensor<1>,
) -> [TensorData; 4] {
    let x = x.clone().detach().require_grad();
    let y = f(layer, x.clone());
    let grads = loss(y.clone()).backward();
    let bias = layer.bias.as_ref().unwrap().val();
    [
        y.into_data(),
        x.grad(&grads).unwrap().into_data(),
        layer.weight.val().grad(&grads).unwrap().into_data(),
        bias.grad(&grads).unwrap().into_data(),
    ]
}

/// The fused op against Burn's `Linear::forward`, value and every gradient, on `view(x)` for a
/// random `x` of `shape`, under the loss `Σ w·y` for a random `w` (`weighted`) or `Σ y`.
fn assert_matches_burn(
    (d_in, d_out): (usize, usize),
    shape: [usize; 2],
    view: impl Fn(Tensor<2>) -> Tensor<2> + Copy,
    weighted: bool,
) {
    let device = Device::flex().autodiff();
    let layer = layer(d_in, d_out, &device);
    let x = Tensor::<2>::random(shape, Distribution::Normal(0.3, 2.0), &device);
    let rows = view(x.clone()).dims()[0];
    let w = Tensor::<2>::random([rows, d_out], Distribution::Normal(0.0, 1.0), &device);
    // `Σ y` hands back an upstream gradient whose strides are all zero.
    let loss = |y: Tensor<2>| if weighted { (y * w.clone()).sum() } else { y.sum() };
    let fused = value_and_grads(&layer, &x, |l, x| linear(l, view(x)), &loss);
    let reference = value_and_grads(&layer, &x, |l, x| l.forward(view(x)), &loss);
    for (a, b) in fused.iter().zip(&reference) {
        a.assert_approx_eq::<f32>(b, Tolerance::absolute(2e-4));
    }
}

#[test]
fn fused_value_and_gradients_match_burns_linear() {
    // 200 rows: four rayon tasks of the bias passes, the last one partial. 200·40·24
    // multiply-adds stay on one thread; the next test crosses the parallel threshold.
    assert_matches_burn((40, 24), [200, 40], |x| x, true);
}

#[test]
fn a_large_product_runs_threaded_and_matches() {
    // 256·192·192 multiply-adds: gemm's rayon path in the forward and both backward products.
    assert_matches_burn((192, 192), [256, 192], |x| x, true);
}

#[test]
fn a_strided_input_and_a_broadcast_gradient_match() {
    // [9, 70] read as [70, 9]: the features are strided.
    assert_matches_burn((9, 5), [9, 70], |x| x.transpose(), false);
}

#[test]
fn the_untracked_op_matches_burns_linear() {
    let device = Device::flex();
    let layer = layer(7, 11, &device);
    let x = Tensor::<2>::random([33, 7], Distribution::Normal(0.0, 1.0), &device);
    linear(&layer, x.clone())
        .into_data()
        .assert_approx_eq::<f32>(&layer.forward(x).into_data(), Tolerance::absolute(1e-5));
}

#[test]
fn a_frozen_weight_gets_no_gradient_and_the_input_still_does() {
    let device = Device::flex().autodiff();
    let mut layer = layer(6, 4, &device);
    layer.weight = Param::from_tensor(layer.weight.val().detach()).set_require_grad(false);
    let x = Tensor::<2>::random([10, 6], Distribution::Normal(0.0, 1.0), &device).require_grad();
    let grads = linear(&layer, x.clone()).sum().backward();
    assert!(layer.weight.val().grad(&grads).is_none());
    // ∂Σy/∂x = every row the weight's row sums.
    let w = to_vec(layer.weight.val());
    let row_sums: Vec<f32> = w.chunks(4).map(|r| r.iter().sum()).collect();
    let dx = to_vec(x.grad(&grads).unwrap());
    for row in dx.chunks(6) {
        for (got, want) in row.iter().zip(&row_sums) {
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        }
    }
}

#[test]
fn column_sums_match_f64_loops() {
    let (rows, cols) = (197, 13);
    let g: Vec<f32> = (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let sums = column_sums(&g, cols);
    for (c, got) in sums.iter().enumerate() {
        let want: f64 = (0..rows).map(|r| g[r * cols + c] as f64).sum();
        assert!((*got as f64 - want).abs() < 1e-3, "column {c}: {got} vs {want}");
    }
}
