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
//!
//! On the CPU backend in f32, for a layer with a bias, that matmul is the fused op of
//! [`super::cpu::linear`]; elsewhere Burn's `Linear::forward` on the rows.

use burn::nn::Linear;
use burn::tensor::Tensor;

use super::{cpu, on_cpu_f32};

/// `layer` applied to the last axis of `x` `[.., M_in]` → `[.., M_out]`, with every leading
/// axis folded into the rows of a single matmul (same values as `layer.forward(x)` up to
/// float summation order; see the module docs for which op runs).
pub fn linear_rows<const D: usize>(layer: &Linear, x: Tensor<D>) -> Tensor<D> {
    let mut dims = x.dims();
    let d_in = dims[D - 1];
    let rows = dims[..D - 1].iter().product::<usize>();
    #[cfg(test)]
    crate::mac_tally::record(crate::flops::dense_macs(layer, rows));
    let x = x.reshape([rows, d_in]); // [rows, M_in]
    let y = match &layer.bias {
        Some(bias) if on_cpu_f32(&x) => cpu::linear::affine(x, layer.weight.val(), bias.val()),
        _ => layer.forward(x),
    }; // [rows, M_out]
    dims[D - 1] = y.dims()[1];
    y.reshape(dims) // [.., M_out]
}

#[cfg(test)]
mod tests;
