use super::*;
use burn::module::Param;
use burn::tensor::{Device, Distribution, TensorData, Tolerance};

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

/// The door on the CPU (the fused kernel) against its Burn path (`Linear::forward`), value and
/// every gradient, on `view(x)` for a random `x` of `shape`, under the loss `Σ w·y` for a random
/// `w` (`weighted`) or `Σ y`.
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
    let fused = value_and_grads(&layer, &x, |l, x| linear_rows(l, view(x)), &loss);
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
    linear_rows(&layer, x.clone())
        .into_data()
        .assert_approx_eq::<f32>(&layer.forward(x).into_data(), Tolerance::absolute(1e-5));
}

#[test]
fn a_frozen_weight_gets_no_gradient_and_the_input_still_does() {
    let device = Device::flex().autodiff();
    let mut layer = layer(6, 4, &device);
    layer.weight = Param::from_tensor(layer.weight.val().detach()).set_require_grad(false);
    let x = Tensor::<2>::random([10, 6], Distribution::Normal(0.0, 1.0), &device).require_grad();
    let grads = linear_rows(&layer, x.clone()).sum().backward();
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

/// Forward and all three gradients against f64 loops: `y = x·W + b`,
/// `dx = g·Wᵀ`, `dW = xᵀ·g` summed over every row, `db = Σ_rows g`.
#[test]
fn matches_naive_forward_and_gradients() {
    let device = Device::flex().autodiff();
    let (shape, din, dout) = ([2, 3, 32, 5], 5, 7); // 32 rows per batch: the batched path
    let layer = init::linear(din, dout, &device);
    // Non-zero bias so the bias path is checked too.
    let layer = Linear { bias: layer.bias.map(|b| b.map(|t| (t + 0.3).detach().require_grad())), ..layer };
    let x = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &device).require_grad();
    let g = Tensor::<4>::random([2, 3, 32, dout], Distribution::Normal(0.0, 1.0), &device);
    let y = linear_rows(&layer, x.clone());
    assert_eq!(y.dims(), [2, 3, 32, dout]);
    let yv = to_vec(y.clone());
    let grads = (y * g.clone().detach()).sum().backward();

    let rows = 2 * 3 * 32;
    let (xv, gv) = (to_vec(x.clone()), to_vec(g));
    let w = to_vec(layer.weight.val());
    let b = to_vec(layer.bias.as_ref().unwrap().val());
    let close = |got: f32, want: f64, what: &str| {
        assert!((got as f64 - want).abs() < 1e-4 * want.abs().max(1.0), "{what}: {got} vs {want}");
    };
    for r in 0..rows {
        for o in 0..dout {
            let want =
                b[o] as f64 + (0..din).map(|i| xv[r * din + i] as f64 * w[i * dout + o] as f64).sum::<f64>();
            close(yv[r * dout + o], want, "y");
        }
    }
    let dx = to_vec(x.grad(&grads).unwrap());
    for r in 0..rows {
        for i in 0..din {
            let want: f64 = (0..dout).map(|o| gv[r * dout + o] as f64 * w[i * dout + o] as f64).sum();
            close(dx[r * din + i], want, "dx");
        }
    }
    let dw = to_vec(layer.weight.val().grad(&grads).unwrap());
    for i in 0..din {
        for o in 0..dout {
            let want: f64 = (0..rows).map(|r| xv[r * din + i] as f64 * gv[r * dout + o] as f64).sum();
            close(dw[i * dout + o], want, "dW");
        }
    }
    let db = to_vec(layer.bias.as_ref().unwrap().val().grad(&grads).unwrap());
    for o in 0..dout {
        let want: f64 = (0..rows).map(|r| gv[r * dout + o] as f64).sum();
        close(db[o], want, "db");
    }
}
