//! Parameter initialisers matching flax NNX defaults, which Jasmine's models use.
//!
//! Parameters are created lazily (`Param::uninitialized`, as Burn's own layers do): nothing is
//! drawn until a parameter is first used, so building a model that is then loaded from a
//! checkpoint costs no random initialisation, and counting parameters is free.
//!
//! Random values are drawn on the host ([`host_random`]) from the thread's generator, which
//! [`seeded_init`] seeds, then moved to the device: a seed names the same model on every
//! backend (the CPU, wgpu, CUDA), so runs and checkpoints are comparable across devices.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::nn::{LayerNorm, LayerNormConfig, Linear};
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use std::sync::Mutex;

/// Held while a model is built (see [`seeded_init`]): the device generator is process-wide.
static SEEDED_INIT: Mutex<()> = Mutex::new(());

thread_local! {
    /// The generator this thread's parameters are drawn from; [`seeded_init`] reseeds it. One
    /// per thread, so draws on other threads (tests in parallel) never interleave with a
    /// seeded initialisation.
    static HOST_RNG: RefCell<ChaCha8Rng> = RefCell::new(ChaCha8Rng::seed_from_u64(0));
}

/// Touches every float parameter, so lazy initialisation happens now, in module order.
pub struct Materialise;

impl ModuleVisitor for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

/// Builds a module with this thread's host generator (and `device`'s, for anything else drawn
/// on the device) seeded to `seed` and draws every parameter at once, in module order, on this
/// thread. The device generator is process-wide, so this holds a lock: two initialisations
/// running at the same time would otherwise interleave their device draws.
pub fn seeded_init<M: Module, E>(
    device: &Device,
    seed: u64,
    build: impl FnOnce() -> Result<M, E>,
) -> Result<M, E> {
    let _guard = SEEDED_INIT.lock().unwrap_or_else(|p| p.into_inner());
    device.seed(seed);
    HOST_RNG.with(|rng| *rng.borrow_mut() = ChaCha8Rng::seed_from_u64(seed));
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

/// A standard normal draw (Box–Muller; the workspace's `rand` has no normal distribution and
/// Burn's samplers take another `rand` major version).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Values of `shape` drawn from `distribution` by the host generator, on `device`: the same
/// values on every backend. Supports the distributions initialisers use (normal, uniform).
pub fn host_random<const D: usize>(
    shape: [usize; D],
    distribution: Distribution,
    device: &Device,
) -> Tensor<D> {
    host_values(shape, device, |rng| match distribution {
        Distribution::Normal(mean, std) => mean + std * standard_normal(rng),
        Distribution::Uniform(lo, hi) => lo + (hi - lo) * rng.random::<f64>(),
        other => panic!("host_random draws normal or uniform values, not {other:?}"),
    })
}

/// Standard normal truncated to [-2, 2]: out-of-range draws are redrawn (up to
/// `TRUNC_ROUNDS` times, then clamped).
pub fn truncated_normal<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    host_values(shape, device, |rng| {
        let mut x = standard_normal(rng);
        for _ in 0..TRUNC_ROUNDS {
            if x.abs() <= 2.0 {
                break;
            }
            x = standard_normal(rng);
        }
        x.clamp(-2.0, 2.0)
    })
}

/// `shape` values, each `draw(rng)` of the host generator in row-major order, on `device`.
fn host_values<const D: usize>(
    shape: [usize; D],
    device: &Device,
    mut draw: impl FnMut(&mut ChaCha8Rng) -> f64,
) -> Tensor<D> {
    let n = shape.iter().product();
    let values: Vec<f32> = HOST_RNG.with(|rng| {
        let rng = &mut *rng.borrow_mut();
        (0..n).map(|_| draw(rng) as f32).collect()
    });
    Tensor::from_data(TensorData::new(values, shape), device) // [..shape]
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

    /// A dense layer's kernel drawn under `seeded_init(seed)`, with the device generator
    /// left at `device_seed`.
    fn kernel(seed: u64, device_seed: u64) -> Vec<f32> {
        let device = Device::flex();
        let layer = seeded_init(&device, seed, || Ok::<_, ()>(linear(8, 4, &device))).unwrap();
        device.seed(device_seed);
        layer.weight.val().try_into_vec_as::<f32>().unwrap()
    }

    #[test]
    fn a_seed_names_the_parameters_whatever_the_device_generator_does() {
        let a = kernel(3, 0);
        assert_eq!(a, kernel(3, 0), "same seed, same parameters");
        // Draw something from the device generator between two initialisations.
        let device = Device::flex();
        device.seed(99);
        let _ = Tensor::<1>::random([1000], Distribution::Normal(0.0, 1.0), &device);
        assert_eq!(a, kernel(3, 12345), "the device generator's state does not enter");
        assert_ne!(a, kernel(4, 0), "another seed, another model");
    }

    #[test]
    fn host_uniform_and_normal_draws_have_their_moments() {
        let device = Device::flex();
        let moments = |dist| {
            let v: Vec<f32> = seeded_init(&device, 5, || Ok::<_, ()>(host_random([20000], dist, &device)))
                .unwrap()
                .try_into_vec_as::<f32>()
                .unwrap();
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            let range = v.iter().fold([f32::MAX, f32::MIN], |[lo, hi], &x| [lo.min(x), hi.max(x)]);
            (mean, var, range)
        };
        let (mean, var, _) = moments(Distribution::Normal(1.0, 2.0));
        assert!((mean - 1.0).abs() < 0.05 && (var - 4.0).abs() < 0.15, "normal: {mean} {var}");
        let (mean, var, [lo, hi]) = moments(Distribution::Uniform(-3.0, 1.0));
        assert!((mean + 1.0).abs() < 0.03 && (var - 16.0 / 12.0).abs() < 0.05, "uniform: {mean} {var}");
        assert!(lo >= -3.0 && hi < 1.0, "uniform range: {lo} {hi}");
    }

    #[test]
    fn lecun_normal_has_variance_one_over_fan_in_and_bounded_range() {
        let device = Device::flex();
        let fan_in = 16;
        let w = seeded_init(&device, 7, || Ok::<_, ()>(lecun_normal(fan_in, 4096, &device))).unwrap();
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
