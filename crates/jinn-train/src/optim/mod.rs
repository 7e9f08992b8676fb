//! Optimisers — AdamW, and SFD (AdamW plus spectral control of reversible couplings,
//! [`sfd`]) — with explicit hyperparameters, and global-norm gradient clipping.
//!
//! **Parity with Jasmine (optax).** `optax.adamw` is `scale_by_adam` → `add_decayed_weights`
//! → `scale_by_learning_rate`, i.e. per parameter, at update count `t` (1-based):
//! `m = b1·m + (1−b1)·g`, `v = b2·v + (1−b2)·g²`, `m̂ = m/(1−b1^t)`, `v̂ = v/(1−b2^t)`,
//! `p ← p − lr·(m̂/(√v̂ + eps) + wd·p)`: weight decay is decoupled and **multiplied by the
//! learning rate**, eps is outside the square root. Burn 0.22's `AdamW`
//! (`burn-optim/src/optim/adamw.rs`) computes `p·(1 − lr·wd) − lr·m̂/(√v̂ + eps)`, the same
//! formula (rounding order aside), with f32 scalars for the betas and the bias corrections.
//! What differs are Burn's **defaults** (`beta_2 = 0.999`, `epsilon = 1e-5`), so
//! [`OptimConfig`] always sets every hyperparameter explicitly. Jasmine decays every
//! parameter (no mask), which is also what a single-group Burn optimiser does.
//!
//! **Clipping.** Burn's `GradientClippingConfig::Norm` clips each parameter tensor on its
//! own; Jasmine-style (`optax.clip_by_global_norm`, `torch.nn.utils.clip_grad_norm_`)
//! clipping scales *all* gradients by `max_norm / ‖g‖` where `‖g‖` is the L2 norm over every
//! gradient element. [`clip_global_norm`] does that over a [`GradientsParams`]. Jasmine
//! itself does not clip (`clip_norm = None` reproduces it).

mod adamw;
pub mod sfd;
pub mod spectral;

pub use adamw::AdamW;

use crate::error::{Result, TrainError};
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
pub use sfd::BoundScaling;
use sfd::{sfd_optimizer, SpectralControl};

/// Which optimiser a run uses (`train.optim.optimizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptimizerKind {
    /// `"adamw"`: AdamW ([`AdamW`]: its CPU pass on the CPU backend, Burn's step elsewhere).
    #[default]
    AdamW,
    /// `"sfd"`: AdamW plus spectral control of reversible couplings ([`sfd`]).
    Sfd,
}

impl OptimizerKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::AdamW => "adamw",
            OptimizerKind::Sfd => "sfd",
        }
    }
}

impl Serialize for OptimizerKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for OptimizerKind {
    /// Accepts `"adamw"` or `"sfd"`; anything else is an error naming the field.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            "adamw" => Ok(OptimizerKind::AdamW),
            "sfd" => Ok(OptimizerKind::Sfd),
            other => Err(serde::de::Error::custom(format!(
                "train.optim.optimizer: unknown optimizer `{other}`, expected \"adamw\" or \"sfd\""
            ))),
        }
    }
}

/// Optimiser settings (the `train.optim` config section); AdamW defaults are Jasmine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimConfig {
    /// `"adamw"` (default) or `"sfd"`.
    pub optimizer: OptimizerKind,
    /// First-moment decay (Jasmine 0.9).
    pub beta_1: f32,
    /// Second-moment decay (Jasmine **0.9**, not the usual 0.999).
    pub beta_2: f32,
    /// Added to `√v̂` (Jasmine 1e-8; Burn's own default is 1e-5).
    pub epsilon: f32,
    /// Decoupled weight decay, multiplied by the LR (Jasmine 1e-4, on every parameter).
    pub weight_decay: f32,
    /// SFD: largest spectral norm allowed for each matrix inside a reversible coupling's
    /// sub-networks (with `spectral_scaling = "shape"`, for a square one).
    pub spectral_bound: f64,
    /// SFD: `"shape"` (default: a `fan_in → fan_out` matrix ≤
    /// `spectral_bound·√(fan_out/fan_in)`) or `"uniform"` (every controlled matrix ≤
    /// `spectral_bound`), see [`BoundScaling`].
    pub spectral_scaling: BoundScaling,
    /// SFD: power iterations per step for each controlled matrix.
    pub power_iterations: usize,
    /// SFD: power iterations at a controlled matrix's first step (from the seeded start
    /// vector); with a tolerance, a step runs at most ten times this many.
    pub power_init_iterations: usize,
    /// SFD: after `power_iterations`, keep iterating while the estimated norm still grows by
    /// more than this (relative); 0 = exactly `power_iterations` per step.
    pub power_tolerance: f64,
    /// SFD: seed of the power iterations' start vectors.
    pub power_seed: u64,
}

impl Default for OptimConfig {
    fn default() -> Self {
        OptimConfig {
            optimizer: OptimizerKind::AdamW,
            beta_1: 0.9,
            beta_2: 0.9,
            epsilon: 1e-8,
            weight_decay: 1e-4,
            spectral_bound: 4.0,
            spectral_scaling: BoundScaling::Shape,
            power_iterations: 1,
            power_init_iterations: 50,
            power_tolerance: 1e-7,
            power_seed: 0,
        }
    }
}

impl OptimConfig {
    /// Check ranges; errors name the field (`train.optim.*`).
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("beta_1", self.beta_1), ("beta_2", self.beta_2)] {
            if !(0.0..1.0).contains(&v) {
                return Err(TrainError::config(
                    format!("train.optim.{name}"),
                    format!("must be in [0, 1), got {v}"),
                ));
            }
        }
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return Err(TrainError::config(
                "train.optim.epsilon",
                format!("must be > 0, got {}", self.epsilon),
            ));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(TrainError::config(
                "train.optim.weight_decay",
                format!("must be ≥ 0, got {}", self.weight_decay),
            ));
        }
        let b = self.spectral_bound;
        if !(b.is_finite() && b > 0.0) {
            return Err(TrainError::config(
                "train.optim.spectral_bound",
                format!("must be > 0 and finite, got {b}"),
            ));
        }
        if !(self.power_tolerance.is_finite() && self.power_tolerance >= 0.0) {
            return Err(TrainError::config(
                "train.optim.power_tolerance",
                format!("must be ≥ 0, got {}", self.power_tolerance),
            ));
        }
        if self.power_iterations == 0 || self.power_init_iterations == 0 {
            let field = if self.power_iterations == 0 { "power_iterations" } else { "power_init_iterations" };
            return Err(TrainError::config(format!("train.optim.{field}"), "must be ≥ 1"));
        }
        Ok(())
    }

    /// Burn's AdamW config with exactly these hyperparameters.
    fn adamw(&self) -> AdamWConfig {
        AdamWConfig::new()
            .with_beta_1(self.beta_1)
            .with_beta_2(self.beta_2)
            .with_epsilon(self.epsilon)
            .with_weight_decay(self.weight_decay)
    }

    /// The spectral control SFD applies.
    pub fn spectral_control(&self) -> SpectralControl {
        SpectralControl {
            bound: self.spectral_bound,
            scaling: self.spectral_scaling,
            iterations: self.power_iterations,
            init_iterations: self.power_init_iterations,
            tolerance: self.power_tolerance,
            seed: self.power_seed,
        }
    }

    /// The Burn AdamW optimiser with exactly these hyperparameters (no Burn-side clipping:
    /// use [`clip_global_norm`] before `step`). SFD needs to know the model: with
    /// `optimizer = "sfd"` this is an error; use [`OptimConfig::init_for`].
    pub fn init(&self) -> Result<ModuleOptimizer> {
        self.validate()?;
        match self.optimizer {
            OptimizerKind::AdamW => Ok(self.adamw().init()),
            OptimizerKind::Sfd => Err(TrainError::config(
                "train.optim.optimizer",
                "\"sfd\" needs the model to find its coupling weights (this caller uses \
                 OptimConfig::init; it must use OptimConfig::init_for)",
            )),
        }
    }

    /// The configured optimiser for `model` (no Burn-side clipping: use [`clip_global_norm`]
    /// before `step`). AdamW ignores the model; SFD controls the matrices inside `model`'s
    /// reversible couplings ([`spectral::coupling_weight_paths`]), matched by module path, so
    /// the model may be the freshly built one or the one loaded from a checkpoint.
    pub fn init_for<M: Module>(&self, model: &M) -> Result<ModuleOptimizer> {
        self.validate()?;
        Ok(match self.optimizer {
            OptimizerKind::AdamW => ModuleOptimizer::from(AdamW::new(self)),
            OptimizerKind::Sfd => sfd_optimizer(model, self.adamw().build(), Some(self.spectral_control())),
        })
    }
}

/// Sum of squares of every gradient belonging to `module`'s float parameters, computed on
/// the device per tensor and combined in f64 on the host. Parameters without a gradient
/// (frozen, unused) count as zero.
struct SumSquares<'a> {
    grads: &'a GradientsParams,
    total: f64,
}

impl ModuleVisitor for SumSquares<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            // [] f32 → host; one readback per parameter tensor.
            let s: f32 = g.square().sum().into_scalar::<f32>();
            self.total += s as f64;
        }
    }
}

/// Multiplies every gradient of `module`'s parameters by `factor`.
struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, g.mul_scalar(self.factor));
        }
    }
}

/// Multiply every gradient of `module`'s float parameters by `factor`.
pub fn scale_gradients<M: Module>(module: &M, grads: &mut GradientsParams, factor: f64) {
    module.visit(&mut Scale { grads, factor });
}

/// Global L2 norm `√(Σ g²)` over all gradients of `module`'s float parameters.
pub fn global_grad_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    let mut visitor = SumSquares { grads, total: 0.0 };
    module.visit(&mut visitor);
    visitor.total.sqrt()
}

/// Global-norm clipping: when the global gradient norm exceeds `max_norm`, scale every
/// gradient by `max_norm / norm` (as `optax.clip_by_global_norm`). Returns the norm
/// *before* clipping (log it as `grad_norm`). A non-finite norm leaves the gradients
/// untouched so the caller can see it and skip or stop; scaling would only spread NaNs.
pub fn clip_global_norm<M: Module>(module: &M, grads: &mut GradientsParams, max_norm: f64) -> f64 {
    let norm = global_grad_norm(module, grads);
    if norm.is_finite() && norm > max_norm {
        let mut visitor = Scale { grads, factor: max_norm / norm };
        module.visit(&mut visitor);
    }
    norm
}

#[cfg(test)]
mod sfd_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Module;
    use burn::tensor::{Device, TensorData};

    /// Two parameters of different ranks.
    #[derive(Module, Debug)]
    struct Tiny {
        w: Param<Tensor<2>>, // [3, 2]
        b: Param<Tensor<1>>, // [2]
    }

    impl Tiny {
        fn new(device: &Device) -> Self {
            Tiny {
                w: Param::from_data([[0.5f32, -1.0], [0.25, 2.0], [-0.75, 0.1]], device),
                b: Param::from_data([0.3f32, -0.2], device),
            }
        }
        fn forward(&self, x: Tensor<2>) -> Tensor<2> {
            x.matmul(self.w.val()) + self.b.val().unsqueeze_dim::<2>(0)
        }
    }

    fn values(t: Tensor<2>) -> Vec<f64> {
        t.into_data().try_to_vec::<f32>().unwrap().into_iter().map(f64::from).collect()
    }
    fn values1(t: Tensor<1>) -> Vec<f64> {
        t.into_data().try_to_vec::<f32>().unwrap().into_iter().map(f64::from).collect()
    }

    /// Gradients of a fixed quadratic loss: sum((x·w + b)²) with `x` scaled by `scale`.
    fn grads_for(model: &Tiny, device: &Device, scale: f32) -> GradientsParams {
        let x = Tensor::<2>::from_data(TensorData::from([[1.0f32, 2.0, -1.0], [0.5, -0.3, 4.0]]), device)
            .mul_scalar(scale);
        let loss = model.forward(x).square().sum();
        GradientsParams::from_grads(loss.backward(), model)
    }

    #[test]
    fn global_norm_clipping_matches_naive_f64() {
        let device = Device::flex().autodiff();
        let model = Tiny::new(&device);
        let mut grads = grads_for(&model, &device, 1.0);
        let gw = values(grads.get::<2>(model.w.id).unwrap());
        let gb = values1(grads.get::<1>(model.b.id).unwrap());
        let naive = gw.iter().chain(&gb).map(|g| g * g).sum::<f64>().sqrt();
        assert!(naive > 1.0, "test needs a norm above the clip value, got {naive}");

        let max_norm = 1.0;
        let norm = clip_global_norm(&model, &mut grads, max_norm);
        assert!((norm - naive).abs() <= 1e-5 * naive, "{norm} vs {naive}");
        let cw = values(grads.get::<2>(model.w.id).unwrap());
        let cb = values1(grads.get::<1>(model.b.id).unwrap());
        for (c, g) in cw.iter().chain(&cb).zip(gw.iter().chain(&gb)) {
            let want = g * max_norm / naive;
            assert!((c - want).abs() <= 1e-6 * want.abs().max(1e-6), "{c} vs {want}");
        }
        let after = global_grad_norm(&model, &grads);
        assert!((after - max_norm).abs() < 1e-5, "norm after clipping {after}");
        // Per-tensor directions are preserved and both tensors shrink by the same factor
        // (unlike Burn's per-tensor Norm clipping).
        let ratio_w = cw[0] / gw[0];
        let ratio_b = cb[0] / gb[0];
        assert!((ratio_w - ratio_b).abs() < 1e-6);
    }

    #[test]
    fn small_gradients_are_not_clipped() {
        let device = Device::flex().autodiff();
        let model = Tiny::new(&device);
        let mut grads = grads_for(&model, &device, 1.0);
        let before = values(grads.get::<2>(model.w.id).unwrap());
        let norm = clip_global_norm(&model, &mut grads, 1e9);
        assert!(norm > 0.0);
        assert_eq!(values(grads.get::<2>(model.w.id).unwrap()), before);
    }

    /// Hand-written AdamW (optax formula) in f64 for one parameter vector.
    struct NaiveAdamW {
        m: Vec<f64>,
        v: Vec<f64>,
        t: i32,
    }

    impl NaiveAdamW {
        fn step(&mut self, cfg: &OptimConfig, lr: f64, p: &mut [f64], g: &[f64]) {
            let (b1, b2, eps, wd) =
                (cfg.beta_1 as f64, cfg.beta_2 as f64, cfg.epsilon as f64, cfg.weight_decay as f64);
            self.t += 1;
            for i in 0..p.len() {
                self.m[i] = b1 * self.m[i] + (1.0 - b1) * g[i];
                self.v[i] = b2 * self.v[i] + (1.0 - b2) * g[i] * g[i];
                let mh = self.m[i] / (1.0 - b1.powi(self.t));
                let vh = self.v[i] / (1.0 - b2.powi(self.t));
                p[i] -= lr * (mh / (vh.sqrt() + eps) + wd * p[i]);
            }
        }
    }

    #[test]
    fn adamw_two_steps_match_hand_written_formula() {
        let device = Device::flex().autodiff();
        // A large weight decay makes the decay term visible at f32 precision.
        let cfg = OptimConfig { weight_decay: 0.5, ..OptimConfig::default() };
        let mut optim = cfg.init().unwrap();
        let mut model = Tiny::new(&device);
        let mut pw = values(model.w.val());
        let mut pb = values1(model.b.val());
        let (mut nw, mut nb) = (
            NaiveAdamW { m: vec![0.0; 6], v: vec![0.0; 6], t: 0 },
            NaiveAdamW { m: vec![0.0; 2], v: vec![0.0; 2], t: 0 },
        );
        for (lr, scale) in [(1e-2, 1.0f32), (3e-2, -0.5)] {
            let grads = grads_for(&model, &device, scale);
            let gw = values(grads.get::<2>(model.w.id).unwrap());
            let gb = values1(grads.get::<1>(model.b.id).unwrap());
            nw.step(&cfg, lr, &mut pw, &gw);
            nb.step(&cfg, lr, &mut pb, &gb);
            model = optim.step(lr, model, grads);
            let (bw, bb) = (values(model.w.val()), values1(model.b.val()));
            for (a, e) in bw.iter().chain(&bb).zip(pw.iter().chain(&pb)) {
                assert!((a - e).abs() <= 2e-6 * e.abs().max(1.0), "lr {lr}: burn {a} vs naive {e}");
            }
        }
    }

    #[test]
    fn defaults_are_jasmines_and_validation_names_fields() {
        let c = OptimConfig::default();
        assert_eq!((c.beta_1, c.beta_2, c.epsilon, c.weight_decay), (0.9, 0.9, 1e-8, 1e-4));
        // SFD's defaults are the ones `jinn bench sfd` measures against its targets.
        assert_eq!((c.spectral_bound, c.spectral_scaling), (4.0, BoundScaling::Shape));
        let bad = OptimConfig { beta_2: 1.0, ..c.clone() };
        assert!(bad.validate().unwrap_err().to_string().contains("train.optim.beta_2"));
        let bad = OptimConfig { epsilon: 0.0, ..c };
        assert!(bad.validate().unwrap_err().to_string().contains("train.optim.epsilon"));
    }
}
