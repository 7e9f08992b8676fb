//! Every op behind the door on a GPU backend — wgpu's software adapter (`DeviceKind::Cpu`,
//! Mesa's lavapipe in CI) — against the CPU backend: the same inputs and parameters (drawn on
//! the host), forward values and the gradients of every input and parameter within f32
//! tolerance, and f16 forwards where the adapter computes in f16 (no WGSL or lavapipe shader
//! offers bf16).
//!
//! Skips, saying so, when no software adapter comes up, unless `JINN_REQUIRE_GPU=1` (CI), where
//! it fails.

use burn::module::Param;
use burn::nn::{LayerNorm, Linear};
use burn::tensor::{DType, Device, DeviceKind, FloatDType, Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;

use super::*;
use crate::init;

/// f32 agreement: `|gpu − cpu| ≤ F32_TOL · max(1, |cpu|)` (summation orders differ).
const F32_TOL: f32 = 2e-4;
/// f16 forward against the f32 CPU forward (an f16 mantissa holds 11 bits).
const F16_TOL: f32 = 3e-2;

/// Named outputs of one case: the forward value first, then gradients.
type Outputs = Vec<(&'static str, TensorData)>;

/// Reads one leaf's gradient (f32) out of a backward's gradients.
type GradOf<'a> = Box<dyn Fn(&burn::tensor::Gradients) -> Option<TensorData> + 'a>;

/// A named case: builds its inputs from an [`Inputs`] and returns its [`Outputs`].
type Case = (&'static str, Box<dyn Fn(&Inputs) -> Outputs>);

/// Draws a case's inputs on the host from one seeded generator and puts them on `device` in
/// `dtype`, as leaves that take gradients when `grads` is set.
struct Inputs {
    device: Device,
    dtype: FloatDType,
    grads: bool,
    rng: RefCell<ChaCha8Rng>,
}

impl Inputs {
    fn new(device: Device, dtype: FloatDType, grads: bool) -> Self {
        Inputs { device, dtype, grads, rng: RefCell::new(ChaCha8Rng::seed_from_u64(7)) }
    }

    /// Uniform values in `[-scale, scale)`.
    fn values<const D: usize>(&self, shape: [usize; D], scale: f32) -> TensorData {
        let n = shape.iter().product();
        let mut rng = self.rng.borrow_mut();
        let v: Vec<f32> = (0..n).map(|_| scale * (2.0 * rng.random::<f32>() - 1.0)).collect();
        TensorData::new(v, shape)
    }

    fn leaf<const D: usize>(&self, shape: [usize; D], scale: f32) -> Tensor<D> {
        let t = Tensor::<D>::from_data(self.values(shape, scale), &self.device).cast(self.dtype);
        if self.grads {
            t.require_grad()
        } else {
            t
        }
    }

    /// A weight for the `Σ w·f(..)` whose gradients are compared (not a leaf).
    fn weight<const D: usize>(&self, shape: [usize; D]) -> Tensor<D> {
        Tensor::<D>::from_data(self.values(shape, 1.0), &self.device).cast(self.dtype)
    }

    fn linear(&self, d_in: usize, d_out: usize) -> Linear {
        let scale = (3.0 / d_in as f32).sqrt();
        Linear {
            weight: Param::from_tensor(self.leaf([d_in, d_out], scale)), // [d_in, d_out]
            bias: Some(Param::from_tensor(self.leaf([d_out], 0.5))),     // [d_out]
        }
    }

    fn layer_norm(&self, d: usize) -> LayerNorm {
        let mut norm = init::layer_norm(d, &self.device);
        norm.gamma = Param::from_tensor(self.leaf([d], 1.5)); // [d]
        norm.beta = Some(Param::from_tensor(self.leaf([d], 0.5))); // [d]
        norm
    }
}

/// `out`, and with gradients, those of `Σ w·out` for `leaves` (in that order).
fn value_and_grads<const D: usize>(
    m: &Inputs,
    out: Tensor<D>,
    leaves: Vec<(&'static str, GradOf<'_>)>,
) -> Outputs {
    let mut outputs = vec![("value", out.clone().cast(FloatDType::F32).into_data())];
    if m.grads {
        let w = m.weight(out.dims());
        let grads = (out * w).sum().backward();
        for (name, grad) in leaves {
            outputs.push((name, grad(&grads).unwrap_or_else(|| panic!("no gradient for {name}"))));
        }
    }
    outputs
}

/// A gradient getter for a leaf tensor.
fn grad_of<const D: usize>(t: &Tensor<D>) -> GradOf<'_> {
    Box::new(move |g| t.grad(g).map(|g| g.cast(FloatDType::F32).into_data()))
}

fn linear_case(m: &Inputs) -> Outputs {
    let layer = m.linear(12, 7);
    let x = m.leaf([2, 5, 12], 1.0); // [b, t, M_in]
    let out = linear_rows(&layer, x.clone()); // [b, t, M_out]
    let (w, b) = (layer.weight.val(), layer.bias.as_ref().unwrap().val());
    value_and_grads(m, out, vec![("dx", grad_of(&x)), ("dweight", grad_of(&w)), ("dbias", grad_of(&b))])
}

fn layer_norm_case(m: &Inputs) -> Outputs {
    let norm = m.layer_norm(16);
    let x = m.leaf([3, 4, 16], 2.0); // [b, t, M]
    let out = layer_norm(&norm, x.clone());
    let (g, b) = (norm.gamma.val(), norm.beta.as_ref().unwrap().val());
    value_and_grads(m, out, vec![("dx", grad_of(&x)), ("dgamma", grad_of(&g)), ("dbeta", grad_of(&b))])
}

/// Attention of `seq_q` queries over `seq_k` keys, heads of width 8.
fn attention_case(m: &Inputs, seq_q: usize, seq_k: usize, heads: usize, causal: bool) -> Outputs {
    let width = 8 * heads;
    let q = m.leaf([2, seq_q, width], 1.5); // [b, seq_q, M]
    let k = m.leaf([2, seq_k, width], 1.5); // [b, seq_k, M]
    let v = m.leaf([2, seq_k, width], 1.5); // [b, seq_k, M]
    let out = attention(q.clone(), k.clone(), v.clone(), heads, causal); // [b, seq_q, M]
    value_and_grads(m, out, vec![("dq", grad_of(&q)), ("dk", grad_of(&k)), ("dv", grad_of(&v))])
}

/// A KV cache's window: queries over frames 0..5 of key and value buffers holding 9.
fn kv_window_case(m: &Inputs) -> Outputs {
    let q = m.leaf([2, 5, 16], 1.5); // [b, 5, M]
    let k = m.leaf([2, 9, 16], 1.5); // [b, 9, M]
    let v = m.leaf([2, 9, 16], 1.5); // [b, 9, M]
    let out = attention(q.clone(), k.clone().narrow(1, 0, 5), v.clone().narrow(1, 0, 5), 2, true);
    value_and_grads(m, out, vec![("dq", grad_of(&q)), ("dk", grad_of(&k)), ("dv", grad_of(&v))])
}

/// Self-attention with the three projections (packed into one matmul on the CPU).
fn self_attention_case(m: &Inputs, causal: bool) -> Outputs {
    let [query, key, value] = [m.linear(16, 16), m.linear(16, 16), m.linear(16, 16)];
    let x = m.leaf([2, 6, 16], 1.0); // [b, t, M]
    let out = self_attention(x.clone(), [&query, &key, &value], 2, causal); // [b, t, M]
    let weights = [&query, &key, &value].map(|l| l.weight.val());
    let [wq, wk, wv] = &weights;
    let leaves = vec![("dx", grad_of(&x)), ("dwq", grad_of(wq)), ("dwk", grad_of(wk)), ("dwv", grad_of(wv))];
    value_and_grads(m, out, leaves)
}

fn activation_case(m: &Inputs, f: fn(Tensor<2>) -> Tensor<2>) -> Outputs {
    let x = m.leaf([4, 33], 4.0); // [rows, M]
    let out = f(x.clone());
    value_and_grads(m, out, vec![("dx", grad_of(&x))])
}

fn mse_case(m: &Inputs) -> Outputs {
    let pred = m.leaf([2, 3, 8, 8], 1.0); // [b, t, h, w]
    let target = m.leaf([2, 3, 8, 8], 1.0).detach(); // [b, t, h, w]
    let out = mean_squared_error(pred.clone(), target); // [1]
    value_and_grads(m, out, vec![("dpred", grad_of(&pred))])
}

fn xent_case(m: &Inputs) -> Outputs {
    let logits = m.leaf([2, 2, 3, 11], 3.0); // [b, t, n, V]
    let targets: Vec<i64> = m.values([12], 5.5).iter::<f32>().map(|v| (v + 5.5) as i64 % 11).collect();
    let targets = Tensor::<3, Int>::from_data(TensorData::new(targets, [2, 2, 3]), &m.device); // [b, t, n]
    let mask: Vec<f32> =
        m.values([12], 1.0).iter::<f32>().map(|v| if v > -0.3 { 1.0 } else { 0.0 }).collect();
    let weight = Tensor::<3>::from_data(TensorData::new(mask, [2, 2, 3]), &m.device).cast(m.dtype); // [b, t, n]
    let losses = token_cross_entropy(logits.clone(), targets, weight, 1e-2);
    let mut outputs = value_and_grads(m, losses.loss, vec![("dlogits", grad_of(&logits))]);
    outputs.push(("ce", losses.ce.cast(FloatDType::F32).into_data()));
    outputs.push(("z", losses.z.cast(FloatDType::F32).into_data()));
    outputs
}

/// Every case, by name.
fn cases() -> Vec<Case> {
    vec![
        ("linear_rows", Box::new(linear_case)),
        ("layer_norm", Box::new(layer_norm_case)),
        ("self-attention", Box::new(|m: &Inputs| attention_case(m, 7, 7, 2, false))),
        ("causal attention", Box::new(|m: &Inputs| attention_case(m, 7, 7, 4, true))),
        ("cross-attention", Box::new(|m: &Inputs| attention_case(m, 1, 9, 2, false))),
        ("KV-cache window", Box::new(kv_window_case)),
        ("packed QKV self_attention", Box::new(|m: &Inputs| self_attention_case(m, false))),
        ("packed QKV causal self_attention", Box::new(|m: &Inputs| self_attention_case(m, true))),
        ("gelu_tanh", Box::new(|m: &Inputs| activation_case(m, gelu_tanh))),
        ("sigmoid", Box::new(|m: &Inputs| activation_case(m, sigmoid))),
        ("mean_squared_error", Box::new(mse_case)),
        ("token_cross_entropy", Box::new(xent_case)),
    ]
}

/// The largest `|gpu − cpu| / max(1, |cpu|)` over two equally shaped outputs.
fn worst(cpu: &TensorData, gpu: &TensorData) -> f32 {
    assert_eq!(cpu.shape(), gpu.shape(), "shapes differ");
    let (a, b) = (cpu.try_to_vec::<f32>().unwrap(), gpu.try_to_vec::<f32>().unwrap());
    a.iter().zip(&b).map(|(x, y)| (x - y).abs() / x.abs().max(1.0)).fold(0.0, f32::max)
}

/// The software adapter, when one comes up (a missing driver panics inside wgpu).
fn software_gpu() -> Option<Device> {
    let device = Device::wgpu(DeviceKind::Cpu);
    let probe = device.clone();
    let up = std::panic::catch_unwind(move || Tensor::<1>::ones([4], &probe).sum().into_scalar::<f32>());
    match up {
        Ok(4.0) => Some(device),
        _ => {
            let required = std::env::var("JINN_REQUIRE_GPU").as_deref() == Ok("1");
            assert!(!required, "JINN_REQUIRE_GPU=1 but no software wgpu adapter (lavapipe) comes up");
            eprintln!("SKIPPED: no software wgpu adapter here (install mesa-vulkan-drivers and libvulkan1)");
            None
        }
    }
}

#[test]
fn every_op_behind_the_door_computes_on_wgpu_what_it_computes_on_the_cpu() {
    let Some(gpu) = software_gpu() else { return };
    let f16 = gpu.supports_dtype(DType::F16);
    let mut failures = Vec::new();
    let mut compare = |what: String, a: &TensorData, b: &TensorData, tol: f32| {
        let err = worst(a, b);
        eprintln!("{what}: worst {err:.2e}");
        if err > tol {
            failures.push(format!("{what} differs by {err:.2e} (> {tol:.0e})"));
        }
    };
    for (name, case) in cases() {
        let cpu = case(&Inputs::new(Device::flex().autodiff(), FloatDType::F32, true));
        // Values from a forward without the tape, gradients from one with it.
        let value = case(&Inputs::new(gpu.clone(), FloatDType::F32, false));
        compare(format!("{name} value (f32)"), &cpu[0].1, &value[0].1, F32_TOL);
        let taped = case(&Inputs::new(gpu.clone().autodiff(), FloatDType::F32, true));
        for ((what, a), (_, b)) in cpu.iter().zip(&taped).skip(1) {
            compare(format!("{name} {what} (f32)"), a, b, F32_TOL);
        }
        if f16 {
            let half = case(&Inputs::new(gpu.clone(), FloatDType::F16, false));
            compare(format!("{name} value (f16)"), &cpu[0].1, &half[0].1, F16_TOL);
        }
    }
    if !f16 {
        eprintln!("this adapter does not compute in f16: f16 forwards not compared");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
