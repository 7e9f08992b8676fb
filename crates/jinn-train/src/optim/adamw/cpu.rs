//! AdamW's update as one parallel host pass per parameter, for the CPU backend.
//!
//! Burn 0.22's `AdamW::step` is about fifteen tensor ops per parameter (moments, bias
//! corrections, square root, division, decay, update), each a single-threaded pass over the
//! parameter into a new buffer: 5 % of a jasmine-small LAM training step on 2 cores, with the
//! second core idle. [`CpuAdamW`] computes the same formula (the module docs of
//! [`crate::optim`]) elementwise in one pass shared out to the rayon pool, updating the moment
//! buffers in place when the optimiser state owns them. Its state is Burn's `AdamWState`, so
//! checkpoints are the same as with Burn's optimiser either way. Written by hand because Burn
//! has no fused optimiser step.

use crate::optim::OptimConfig;
use burn::optim::{AdamWState, AdaptiveMomentumState, LearningRate};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

/// Elements per rayon task of the update.
const CHUNK: usize = 16 * 1024;

/// AdamW's update as the host pass of the module docs. CPU backend, f32 only, no AMSGrad
/// maximum (the door checks).
#[derive(Clone)]
pub(super) struct CpuAdamW {
    coefficients: Coefficients,
}

/// The hyperparameters of the update.
#[derive(Clone, Copy, Debug)]
struct Coefficients {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
}

impl CpuAdamW {
    /// The update with `config`'s hyperparameters.
    pub(super) fn new(config: &OptimConfig) -> Self {
        let OptimConfig { beta_1, beta_2, epsilon, weight_decay, .. } = *config;
        Self { coefficients: Coefficients { beta_1, beta_2, epsilon, weight_decay } }
    }

    /// One step of `tensor` with `grad` from `state` (none before the first step).
    pub(super) fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<AdamWState<D>>,
    ) -> (Tensor<D>, Option<AdamWState<D>>) {
        let (shape, device) = (tensor.shape(), tensor.device());
        let zeros = || TensorData::new(vec![0.0f32; shape.num_elements()], shape.clone());
        let (time, m1, m2) = match state {
            Some(s) => {
                (s.momentum.time + 1, s.momentum.moment_1.into_data(), s.momentum.moment_2.into_data())
            }
            // The first step: zero moments give Burn's initial `(1 − β)·g` and `(1 − β₂)·g²`.
            None => (1, zeros(), zeros()),
        };
        let (mut param, grad, mut m1, mut m2) = (tensor.into_data(), grad.into_data(), m1, m2);
        let step = Step::new(self.coefficients, lr, time);
        let slices = (
            param.as_mut_slice::<f32>(),
            grad.as_slice::<f32>(),
            m1.as_mut_slice::<f32>(),
            m2.as_mut_slice::<f32>(),
        );
        let (Ok(param_values), Ok(grads), Ok(first), Ok(second)) = slices else {
            unreachable!("the door checked that the parameter, gradient and moments are f32");
        };
        param_values
            .par_chunks_mut(CHUNK)
            .zip(grads.par_chunks(CHUNK))
            .zip(first.par_chunks_mut(CHUNK).zip(second.par_chunks_mut(CHUNK)))
            .for_each(|((p, g), (m1, m2))| step.apply(p, g, m1, m2));
        let tensor = |data: TensorData| Tensor::<D>::from_data(data, &device);
        let momentum = AdaptiveMomentumState::new(time, tensor(m1), tensor(m2));
        (tensor(param), Some(AdamWState::new(momentum)))
    }
}

/// The scalars of one update at step `t`, rounded to f32 as Burn's ops round them.
#[derive(Clone, Copy)]
struct Step {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    /// `1 − β₁^t`, `1 − β₂^t`.
    correction_1: f32,
    correction_2: f32,
    /// `1 − lr·wd` (1 without weight decay).
    keep: f32,
    lr: f32,
}

impl Step {
    fn new(c: Coefficients, lr: LearningRate, time: usize) -> Self {
        let t = time as i32;
        Self {
            beta_1: c.beta_1,
            beta_2: c.beta_2,
            epsilon: c.epsilon,
            correction_1: 1.0 - c.beta_1.powi(t),
            correction_2: 1.0 - c.beta_2.powi(t),
            keep: (1.0 - lr * c.weight_decay as f64) as f32,
            lr: lr as f32,
        }
    }

    /// `m₁ ← β₁·m₁ + (1 − β₁)·g`, `m₂ ← β₂·m₂ + (1 − β₂)·g²`,
    /// `p ← p·(1 − lr·wd) − lr·(m₁/c₁)/(√(m₂/c₂) + ε)` elementwise.
    fn apply(&self, p: &mut [f32], g: &[f32], m1: &mut [f32], m2: &mut [f32]) {
        let (f1, f2) = (1.0 - self.beta_1, 1.0 - self.beta_2);
        for (((p, &g), m1), m2) in p.iter_mut().zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
            *m1 = *m1 * self.beta_1 + g * f1;
            *m2 = *m2 * self.beta_2 + g * g * f2;
            let delta = (*m1 / self.correction_1) / ((*m2 / self.correction_2).sqrt() + self.epsilon);
            *p = *p * self.keep - delta * self.lr;
        }
    }
}
