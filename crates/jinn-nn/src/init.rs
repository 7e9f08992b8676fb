//! Parameter initialisers matching flax NNX defaults, which Jasmine's models use.
//!
//! Parameters are created lazily (`Param::uninitialized`, as Burn's own layers do): nothing is
//! drawn until a parameter is first used, so building a model that is then loaded from a
//! checkpoint costs no random initialisation, and counting parameters is free. Random draws use
//! the device's generator (`Tensor::random`) at first use; for a reproducible initialisation seed
//! it with `device.seed(..)` (derived from the run seed) and touch the parameters in a fixed
//! order (e.g. one forward pass) on one thread.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::nn::{LayerNorm, LayerNormConfig, Linear};
use burn::tensor::{Device, Distribution, Tensor};
use std::sync::Mutex;

/// Held while a model is built and drawn from the device generator (see [`seeded_init`]).
static SEEDED_INIT: Mutex<()> = Mutex::new(());

/// Touches every float parameter, so lazy initialisation happens now, in module order.
pub struct Materialise;

impl ModuleVisitor for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

/// Builds a module with `device`'s generator seeded to `seed` and draws every parameter at
/// once, in module order, under a process-wide lock: the generator is shared by every user of
/// the backend, so two initialisations running at the same time (tests in parallel, several
/// models in one process) would otherwise interleave their draws and differ from run to run.
pub fn seeded_init<M: Module, E>(
    device: &Device,
    seed: u64,
    build: impl FnOnce() -> Result<M, E>,
) -> Result<M, E> {
    let _guard = SEEDED_INIT.lock().unwrap_or_else(|p| p.into_inner());
    device.seed(seed);
    let model = build()?;
    model.visit(&mut Materialise);
    Ok(model)
}

/// LayerNorm epsilon used by every Jasmine LayerNorm.
pub const LAYER_NORM_EPS: f64 = 1e-6;

/// Rejection rounds for the truncated normal; after them a value is still outside
/// [-2, 2] with probability 0.0455^8 ≈ 2e-11 and is clamped.
const TRUNC_ROUNDS: usize = 8;

/// Standard deviation of a unit normal truncated to [-2, 2] (flax `variance_scaling` constant).
const TRUNC_STD: f64 = 0.879_625_661_034_239_8;

/// Standard normal truncated to [-2, 2], by redrawing out-of-range entries.
pub fn truncated_normal<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    // [..shape]
    let mut x = Tensor::<D>::random(shape, Distribution::Normal(0.0, 1.0), device);
    for _ in 0..TRUNC_ROUNDS {
        let outside = x.clone().abs().greater_elem(2.0);
        let fresh = Tensor::<D>::random(shape, Distribution::Normal(0.0, 1.0), device);
        x = x.mask_where(outside, fresh);
    }
    x.clamp(-2.0, 2.0)
}

/// LeCun normal kernel `[fan_in, fan_out]`: truncated normal (±2σ) scaled so that the
/// variance is exactly `1 / fan_in` (flax `lecun_normal`).
pub fn lecun_normal(fan_in: usize, fan_out: usize, device: &Device) -> Tensor<2> {
    let std = (1.0 / fan_in as f64).sqrt() / TRUNC_STD;
    truncated_normal([fan_in, fan_out], device) * std // [fan_in, fan_out]
}

/// A trainable parameter of `shape` whose value `make(device)` is computed at first use.
pub fn lazy_param<const D: usize>(
    shape: [usize; D],
    device: &Device,
    make: impl Fn(&Device) -> Tensor<D> + Send + Sync + 'static,
) -> Param<Tensor<D>> {
    let init = move |device: &Device, require_grad: bool| {
        let value = make(device);
        if require_grad {
            value.require_grad()
        } else {
            value
        }
    };
    Param::uninitialized(ParamId::new(), init, device.clone(), true, shape.into())
}

/// A dense layer `d_in → d_out` with a LeCun-normal kernel and a zero bias (flax `nnx.Linear`).
pub fn linear(d_in: usize, d_out: usize, device: &Device) -> Linear {
    Linear {
        weight: lazy_param([d_in, d_out], device, move |dev| lecun_normal(d_in, d_out, dev)), // [d_in, d_out]
        bias: Some(lazy_param([d_out], device, move |dev| Tensor::zeros([d_out], dev))),      // [d_out]
    }
}

/// A dense layer `d_in → d_out` with zero kernel and bias: it outputs 0 until trained (the
/// last layer of a residual branch that should start as the identity).
pub fn zero_linear(d_in: usize, d_out: usize, device: &Device) -> Linear {
    Linear {
        // [d_in, d_out]
        weight: lazy_param([d_in, d_out], device, move |dev| Tensor::zeros([d_in, d_out], dev)),
        bias: Some(lazy_param([d_out], device, move |dev| Tensor::zeros([d_out], dev))), // [d_out]
    }
}

/// LayerNorm over `d` features, scale 1, bias 0, epsilon 1e-6 (as Jasmine's `jasmine/utils/nn.py`).
pub fn layer_norm(d: usize, device: &Device) -> LayerNorm {
    LayerNormConfig::new(d).with_epsilon(LAYER_NORM_EPS).init(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lecun_normal_has_variance_one_over_fan_in_and_bounded_range() {
        let device = Device::flex();
        device.seed(7);
        let fan_in = 16;
        let w = lecun_normal(fan_in, 4096, &device);
        let v: Vec<f32> = w.try_into_vec_as::<f32>().unwrap();
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var * fan_in as f64 - 1.0).abs() < 0.05, "var·fan_in {}", var * 16.0);
        let bound = 2.0 * (1.0 / fan_in as f64).sqrt() / TRUNC_STD + 1e-6;
        assert!(v.iter().all(|&x| (x as f64).abs() <= bound));
    }
}
