//! Coupling blocks on two halves of the feature axis, each followed by a [`Scatter`]:
//!
//! - additive (RevNet/NICE): `y1 = x1 + F(x2)`, `y2 = x2 + G(y1)`; inverse
//!   `x2 = y2 − G(y1)`, `x1 = y1 − F(x2)`; volume-preserving (log-det 0);
//! - affine with bounded log-scale (RealNVP): `s = c·tanh(S(x2)/c)`,
//!   `y1 = x1 ⊙ exp(s) + T(x2)`, `y2 = x2`; inverse `x1 = (y1 − T(x2)) ⊙ exp(−s)`;
//!   log-det `Σ s`. The bound `c` caps the gain per block at `e^c`.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::block::{input_grad, Block, ReverseStep, ReversibleBlock};
use super::grads::{accumulate, vjp, Lift};
use super::scatter::Scatter;
use super::subnet::SubNet;

/// Splits the last axis into its two halves.
fn halves<const D: usize>(x: Tensor<D>) -> (Tensor<D>, Tensor<D>) {
    let m = x.dims()[D - 1];
    let half = m / 2;
    (x.clone().narrow(D - 1, 0, half), x.narrow(D - 1, half, m - half))
}

/// Joins two halves along the last axis.
fn join<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> Tensor<D> {
    Tensor::cat(vec![a, b], D - 1)
}

/// Additive coupling `y1 = x1 + F(x2)`, `y2 = x2 + G(y1)`, then a channel scatter.
/// F and G act on half the width (`width / 2`; the width must be even).
#[derive(Module, Debug)]
pub struct AdditiveCoupling<F, G> {
    /// F: reads the second half, updates the first.
    pub f: F,
    /// G: reads the updated first half, updates the second.
    pub g: G,
    /// Channel permutation applied after the coupling.
    pub scatter: Scatter,
}

impl<const D: usize, F: SubNet<D>, G: SubNet<D>> Block<D> for AdditiveCoupling<F, G> {
    fn forward(&self, x: Tensor<D>) -> Tensor<D> {
        let (x1, x2) = halves(x); // [.., M/2] each
        let y1 = x1 + self.f.apply(x2.clone());
        let y2 = x2 + self.g.apply(y1.clone());
        self.scatter.forward(join(y1, y2)) // [.., M]
    }
}

impl<const D: usize, F: SubNet<D>, G: SubNet<D>> ReversibleBlock<D> for AdditiveCoupling<F, G> {
    fn inverse(&self, y: Tensor<D>) -> Tensor<D> {
        let (y1, y2) = halves(self.scatter.inverse(y));
        let x2 = y2 - self.g.apply(y1.clone());
        let x1 = y1 - self.f.apply(x2.clone());
        join(x1, x2)
    }

    fn reverse_vjp(
        &self,
        y: Tensor<D>,
        grad_y: Tensor<D>,
        lift: &Lift,
        grads: &mut GradientsParams,
    ) -> ReverseStep<D> {
        let (y1, y2) = halves(self.scatter.inverse(y));
        let (gy1, gy2) = halves(self.scatter.inverse(grad_y)); // a permutation's VJP is its inverse

        // G once on the tape: its value rebuilds x2, its VJP gives G's grads and ∂/∂y1.
        let y1_leaf = lift.leaf(y1.clone());
        let g_out = self.g.apply(y1_leaf.clone());
        let x2 = y2 - g_out.clone().inner();
        let mut local = vjp(g_out, gy2.clone());
        accumulate(grads, &self.g, &mut local);
        let gy1 = gy1 + input_grad(&y1_leaf, &mut local);

        // F once on the tape: its value rebuilds x1, its VJP gives F's grads and ∂/∂x2.
        let x2_leaf = lift.leaf(x2.clone());
        let f_out = self.f.apply(x2_leaf.clone());
        let x1 = y1 - f_out.clone().inner();
        let mut local = vjp(f_out, gy1.clone());
        accumulate(grads, &self.f, &mut local);
        let gx2 = gy2 + input_grad(&x2_leaf, &mut local);

        ReverseStep { input: join(x1, x2), grad_input: join(gy1, gx2) }
    }
}

/// Affine coupling with a bounded log-scale, `y1 = x1 ⊙ exp(c·tanh(S(x2)/c)) + T(x2)`,
/// `y2 = x2`, then a channel scatter. S and T act on half the width.
#[derive(Module, Debug)]
pub struct AffineCoupling<S, T> {
    /// Log-scale network (before the bound).
    pub s: S,
    /// Shift network.
    pub t: T,
    /// Bound `c` on the log-scale: `|s| < c`.
    pub bound: f64,
    /// Channel permutation applied after the coupling.
    pub scatter: Scatter,
}

impl<S, T> AffineCoupling<S, T> {
    fn log_scale<const D: usize>(&self, raw: Tensor<D>) -> Tensor<D> {
        (raw / self.bound).tanh() * self.bound
    }
}

impl<S, T> AffineCoupling<S, T> {
    /// Forward with the log-determinant of the Jacobian per batch element: `(y, log_det [B])`.
    /// (The scatter's log-det is 0.)
    pub fn forward_with_log_det<const D: usize>(&self, x: Tensor<D>) -> (Tensor<D>, Tensor<1>)
    where
        S: SubNet<D>,
        T: SubNet<D>,
    {
        let b = x.dims()[0];
        let (x1, x2) = halves(x);
        let s = self.log_scale(self.s.apply(x2.clone())); // [.., M/2]
        let y1 = x1 * s.clone().exp() + self.t.apply(x2.clone());
        let log_det = s.reshape([b as i32, -1]).sum_dim(1).reshape([b]); // [B]
        (self.scatter.forward(join(y1, x2)), log_det)
    }
}

impl<const D: usize, S: SubNet<D>, T: SubNet<D>> Block<D> for AffineCoupling<S, T> {
    fn forward(&self, x: Tensor<D>) -> Tensor<D> {
        self.forward_with_log_det(x).0
    }
}

impl<const D: usize, S: SubNet<D>, T: SubNet<D>> ReversibleBlock<D> for AffineCoupling<S, T> {
    fn inverse(&self, y: Tensor<D>) -> Tensor<D> {
        let (y1, x2) = halves(self.scatter.inverse(y));
        let s = self.log_scale(self.s.apply(x2.clone()));
        let x1 = (y1 - self.t.apply(x2.clone())) * s.neg().exp();
        join(x1, x2)
    }

    fn reverse_vjp(
        &self,
        y: Tensor<D>,
        grad_y: Tensor<D>,
        lift: &Lift,
        grads: &mut GradientsParams,
    ) -> ReverseStep<D> {
        let (y1, x2) = halves(self.scatter.inverse(y));
        let (gy1, gy2) = halves(self.scatter.inverse(grad_y));

        // S and T once on the tape: their values rebuild x1, their VJP gives their grads and ∂/∂x2.
        let x2_leaf = lift.leaf(x2.clone());
        let s = self.log_scale(self.s.apply(x2_leaf.clone()));
        let t = self.t.apply(x2_leaf.clone());
        let scale = s.clone().inner().exp(); // plain exp(s)
        let x1 = (y1 - t.clone().inner()) / scale.clone();
        let y1_taped = lift.constant(x1.clone()) * s.exp() + t;
        let mut local = vjp(y1_taped, gy1.clone());
        accumulate(grads, &self.s, &mut local);
        accumulate(grads, &self.t, &mut local);
        let gx2 = gy2 + input_grad(&x2_leaf, &mut local);
        let gx1 = gy1 * scale;

        ReverseStep { input: join(x1, x2), grad_input: join(gx1, gx2) }
    }
}
