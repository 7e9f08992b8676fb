//! AdamW behind one door: [`AdamW`] decides, once per parameter step, whether the CPU pass
//! ([`cpu`]: the same update as one parallel host pass) or Burn's `AdamW::step` runs.
//!
//! The CPU pass runs when the parameter, its gradient and the moments (if any yet) live on the
//! CPU backend in f32 ([`jinn_nn::ops::on_cpu_f32`]) and the state has no AMSGrad maximum;
//! everything else (GPU backends, bf16) takes Burn's step. The state is Burn's `AdamWState`
//! either way, so checkpoints are the same whichever path wrote them.

mod cpu;

use super::OptimConfig;
use burn::optim::{AdamWState, LearningRate, Optimizer};
use burn::tensor::{Device, Tensor};
use jinn_nn::ops::on_cpu_f32;

/// AdamW with [`OptimConfig`]'s hyperparameters: the CPU pass on the CPU backend in f32, Burn's
/// optimiser elsewhere (see the module docs).
#[derive(Clone)]
pub struct AdamW {
    burn: burn::optim::AdamW,
    cpu: cpu::CpuAdamW,
}

impl AdamW {
    /// AdamW with `config`'s hyperparameters (no AMSGrad, no cautious weight decay: options
    /// [`OptimConfig`] never sets).
    pub fn new(config: &OptimConfig) -> Self {
        Self { burn: config.adamw().build(), cpu: cpu::CpuAdamW::new(config) }
    }
}

/// Whether the CPU pass takes the step of `tensor` with `grad` from `state`.
fn cpu_pass_applies<const D: usize>(
    tensor: &Tensor<D>,
    grad: &Tensor<D>,
    state: Option<&AdamWState<D>>,
) -> bool {
    let cpu_state = state.is_none_or(|s| {
        let m = &s.momentum;
        m.max_moment_2.is_none() && on_cpu_f32(&m.moment_1) && on_cpu_f32(&m.moment_2)
    });
    cpu_state && on_cpu_f32(tensor) && on_cpu_f32(grad)
}

impl Optimizer for AdamW {
    type State<const D: usize> = AdamWState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        if cpu_pass_applies(&tensor, &grad, state.as_ref()) {
            self.cpu.step(lr, tensor, grad, state)
        } else {
            self.burn.step(lr, tensor, grad, state)
        }
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &Device) -> Self::State<D> {
        burn::optim::AdamW::to_device(state, device)
    }
}

#[cfg(test)]
mod tests;
