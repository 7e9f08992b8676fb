//! Dense layers applied to the rows of a tensor of any rank, as one 2-D matmul.
//!
//! Why not `Linear::forward` on `[B, T, N, M]` directly: Burn 0.22's runtime `Dispatch`
//! backend has no `linear` op of its own, so the default composite runs. For a rank > 2 input
//! whose row count per batch is a multiple of 32 (or whose merge would not make the output
//! squarer), that composite keeps a *batched* matmul against the weight broadcast over the
//! leading dims. Its autodiff backward then computes one `[M_in, M_out]` weight gradient per
//! leading index (e.g. 128 of them for `[8, 16, 16, 128]`), writes them all to a fresh
//! `[B·T, M_in, M_out]` buffer and sums it — about a third of a jasmine-small tokenizer
//! training step. Flattening the leading dims first makes the forward one
//! `[rows, M_in] · [M_in, M_out]` matmul and the weight gradient one `xᵀ · g` matmul.

use burn::nn::Linear;
use burn::tensor::Tensor;

/// `layer` applied to the last axis of `x` `[.., M_in]` → `[.., M_out]`, with every leading
/// axis folded into the rows of a single matmul (same values as `layer.forward(x)` up to
/// float summation order). On the CPU backend that matmul is [`crate::host_linear`]'s fused op.
pub fn linear_rows<const D: usize>(layer: &Linear, x: Tensor<D>) -> Tensor<D> {
    let mut dims = x.dims();
    let d_in = dims[D - 1];
    let rows = dims[..D - 1].iter().product::<usize>();
    #[cfg(test)]
    crate::mac_tally::record(crate::flops::dense_macs(layer, rows));
    let y = crate::host_linear::linear(layer, x.reshape([rows, d_in])); // [rows, M_out]
    dims[D - 1] = y.dims()[1];
    y.reshape(dims) // [.., M_out]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use burn::tensor::{Device, Distribution};

    /// Forward and all three gradients against f64 loops: `y = x·W + b`,
    /// `dx = g·Wᵀ`, `dW = xᵀ·g` summed over every row, `db = Σ_rows g`.
    #[test]
    fn matches_naive_forward_and_gradients() {
        let device = Device::flex().autodiff();
        let (shape, din, dout) = ([2, 3, 32, 5], 5, 7); // 32 rows per batch: the batched path
        let layer = crate::init::linear(din, dout, &device);
        // Non-zero bias so the bias path is checked too.
        let layer =
            Linear { bias: layer.bias.map(|b| b.map(|t| (t + 0.3).detach().require_grad())), ..layer };
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
                let want = b[o] as f64
                    + (0..din).map(|i| xv[r * din + i] as f64 * w[i * dout + o] as f64).sum::<f64>();
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
}
