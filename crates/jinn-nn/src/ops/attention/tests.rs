use super::*;
use burn::module::Param;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Distribution, TensorData, Tolerance};

use crate::init;
use crate::test_util::to_vec;

type Attention = fn(Tensor<3>, Tensor<3>, Tensor<3>, usize, bool) -> Tensor<3>;

/// Value and the gradients of `Σ w·f(q, k, v)` for q, k and v.
fn value_and_grads(
    f: Attention,
    [q, k, v]: &[Tensor<3>; 3],
    w: &Tensor<3>,
    heads: usize,
    causal: bool,
) -> [TensorData; 4] {
    let [q, k, v] = [q, k, v].map(|t| t.clone().detach().require_grad());
    let out = f(q.clone(), k.clone(), v.clone(), heads, causal);
    let grads = (out.clone() * w.clone()).sum().backward();
    [
        out.into_data(),
        q.grad(&grads).unwrap().into_data(),
        k.grad(&grads).unwrap().into_data(),
        v.grad(&grads).unwrap().into_data(),
    ]
}

/// The door on the CPU (the fused kernel) against its Burn path, value and every gradient, for
/// `batch` entries of `seq_q` queries over `seq_k` keys of width `m` in `heads` heads.
fn assert_paths_agree([batch, seq_q, seq_k, m]: [usize; 4], heads: usize, causal: bool) {
    let device = Device::flex().autodiff();
    let random = |s| Tensor::<3>::random([batch, s, m], Distribution::Normal(0.0, 1.5), &device);
    let operands = [random(seq_q), random(seq_k), random(seq_k)];
    let w = random(seq_q);
    let cpu = value_and_grads(attention, &operands, &w, heads, causal);
    let burn = value_and_grads(attention_by_heads, &operands, &w, heads, causal);
    for (what, (a, b)) in ["out", "dq", "dk", "dv"].iter().zip(cpu.iter().zip(&burn)) {
        assert_eq!(a.shape(), b.shape(), "{what}: shape");
        a.assert_approx_eq::<f32>(b, Tolerance::absolute(1e-4));
    }
}

#[test]
fn self_and_cross_attention_paths_agree() {
    assert_paths_agree([3, 17, 17, 12], 3, false);
    assert_paths_agree([5, 16, 16, 8], 2, true);
    // One query row per entry over seven keys (the LAM's action slot).
    assert_paths_agree([4, 1, 7, 8], 2, false);
    // Head widths 32 (the jasmine-small width) and 12, more keys than queries.
    assert_paths_agree([2, 9, 9, 64], 2, true);
    assert_paths_agree([2, 5, 7, 24], 2, false);
}

#[test]
fn key_and_value_windows_of_a_longer_buffer_take_both_paths_alike() {
    // A KV cache's window: frames 0..5 of buffers holding 9 (the CPU kernel reads them in place).
    let device = Device::flex();
    let random = |s| Tensor::<3>::random([3, s, 16], Distribution::Normal(0.0, 1.0), &device);
    let (q, k_buffer, v_buffer) = (random(2), random(9), random(9));
    let window = |t: Tensor<3>| t.slice([0..3, 0..5, 0..16]);
    let cpu = attention(q.clone(), window(k_buffer.clone()), window(v_buffer.clone()), 4, false);
    let burn = attention_by_heads(q, window(k_buffer), window(v_buffer), 4, false);
    cpu.into_data().assert_approx_eq::<f32>(&burn.into_data(), Tolerance::absolute(1e-5));
}

/// Three `m → m` projections, with biases away from zero or none.
fn projections(m: usize, bias: bool, device: &Device) -> [Linear; 3] {
    std::array::from_fn(|_| {
        let mut layer = init::linear(m, m, device);
        layer.bias =
            bias.then(|| Param::from_tensor(Tensor::random([m], Distribution::Uniform(-0.5, 0.5), device)));
        layer
    })
}

/// The Burn path of [`self_attention`]: `Linear::forward` projections and Burn's attention.
fn self_attention_by_burn_ops(x: Tensor<3>, layers: [&Linear; 3], heads: usize, causal: bool) -> Tensor<3> {
    let [q, k, v] = layers.map(|l| l.forward(x.clone()));
    attention_by_heads(q, k, v, heads, causal)
}

#[test]
fn self_attention_paths_agree_in_value_and_every_gradient() {
    // With biases the CPU path projects Q, K, V packed; without, separately. Either way the
    // input's and every projection's gradients must be Burn's.
    let device = Device::flex().autodiff();
    for (bias, causal) in [(true, false), (true, true), (false, true)] {
        let layers = projections(12, bias, &device);
        let layers = [&layers[0], &layers[1], &layers[2]];
        let x = Tensor::<3>::random([2, 5, 12], Distribution::Normal(0.0, 1.0), &device);
        let w = Tensor::<3>::random([2, 5, 12], Distribution::Normal(0.0, 1.0), &device);
        let run = |f: fn(Tensor<3>, [&Linear; 3], usize, bool) -> Tensor<3>| {
            let x = x.clone().detach().require_grad();
            let y = f(x.clone(), layers, 3, causal);
            let grads = (y.clone() * w.clone()).sum().backward();
            let mut all = vec![to_vec(y), to_vec(x.grad(&grads).unwrap())];
            for layer in layers {
                all.push(to_vec(layer.weight.val().grad(&grads).unwrap()));
                if let Some(b) = &layer.bias {
                    all.push(to_vec(b.val().grad(&grads).unwrap()));
                }
            }
            all
        };
        let (cpu, burn) = (run(self_attention), run(self_attention_by_burn_ops));
        for (i, (a, b)) in cpu.iter().zip(&burn).enumerate() {
            assert_eq!(a.len(), b.len(), "bias {bias}, causal {causal}, tensor {i}: length");
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-4, "bias {bias}, causal {causal}, tensor {i}: {x} vs {y}");
            }
        }
    }
}

/// [`attention_heads`] from basic tensor ops, for gradient comparison under autodiff.
fn basic_ops_attend(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    let [_, _, s, hd] = q.dims();
    let scores = q.matmul(k.swap_dims(2, 3)) / (hd as f64).sqrt(); // [b, h, s, s]
    let scores = if causal {
        let mask: Vec<bool> = (0..s * s).map(|ij| ij % s > ij / s).collect();
        let mask = Tensor::<2, Bool>::from_data(TensorData::new(mask, [s, s]), &scores.device());
        scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
    } else {
        scores
    };
    softmax(scores, 3).matmul(v) // [b, h, s, hd]
}

#[test]
fn burns_op_on_split_heads_has_finite_gradients_matching_basic_ops() {
    let device = Device::flex().autodiff();
    for causal in [false, true] {
        let shape = [2, 3, 4, 8];
        let mk = || Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &device);
        let (q, k, v) = (mk(), mk(), mk());
        let g = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &device);
        let grads_of = |f: fn(Tensor<4>, Tensor<4>, Tensor<4>, bool) -> Tensor<4>| {
            let (q, k, v) = (
                q.clone().detach().require_grad(),
                k.clone().detach().require_grad(),
                v.clone().detach().require_grad(),
            );
            let out = f(q.clone(), k.clone(), v.clone(), causal);
            let grads = (out * g.clone().detach()).sum().backward();
            [q, k, v].map(|t| to_vec(t.grad(&grads).unwrap()))
        };
        let fused = grads_of(attention_heads);
        let basic = grads_of(basic_ops_attend);
        for (gf, gb) in fused.iter().zip(&basic) {
            for (a, b) in gf.iter().zip(gb) {
                assert!(a.is_finite(), "non-finite gradient");
                assert!((a - b).abs() < 1e-4, "causal={causal}: {a} vs {b}");
            }
        }
    }
}
