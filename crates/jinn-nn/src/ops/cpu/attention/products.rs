//! Attention over long key sequences as matrix products, one batch entry per task.
//!
//! For a frame's tokens attending to each other (64 or more keys) the row-at-a-time kernel of
//! the parent module spends most of its time loading keys and values once per query. Here each
//! head's `q·kᵀ`, `P·v` and the four products of the backward are single `gemm` calls that read
//! the heads in place (rows `row_stride` apart) and keep their operands in registers across
//! queries, with the softmax and `∂S` as row passes in between. The weights keep the parent's
//! layout `[batch, seq_q, heads, seq_k]`, zero where masked, so either backward can read them.

use super::{Entry, GradRows, Shape};
use crate::ops::cpu::fill::par_fill;
use crate::ops::cpu::math::{avx2_dispatch, dot, exp_f32, max, sum};

/// Keys (and queries) from which attention runs as matrix products: below, a head's products
/// are too small for `gemm` to beat the row kernel (the temporal attention's 16 frames).
const MIN_SEQ: usize = 32;

/// Whether [`forward`] and [`entry_backward`] take this call: long sequences on both sides and
/// more than one batch entry (one entry per task; a sampler's single frame keeps the row kernel,
/// which shares out its query rows). The choice depends on the shapes alone, so a run rounds
/// alike on any number of threads.
pub(super) fn applies(shape: Shape) -> bool {
    shape.seq_q >= MIN_SEQ && shape.seq_k >= MIN_SEQ && shape.batch >= 2
}

/// `dst[m×n] = scale · lhs[m×k] · rhs[k×n]` (written, not accumulated), each operand given by
/// its first element and its row and column strides in elements; one thread.
///
/// # Safety
/// Every element the strides address must lie inside the allocation behind its pointer, and
/// `dst` must not overlap `lhs` or `rhs`.
#[allow(clippy::too_many_arguments)]
unsafe fn product(
    [m, n, k]: [usize; 3],
    dst: *mut f32,
    dst_rs: usize,
    lhs: *const f32,
    [lhs_rs, lhs_cs]: [usize; 2],
    rhs: *const f32,
    [rhs_rs, rhs_cs]: [usize; 2],
    scale: f32,
) {
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            false,
            lhs,
            lhs_cs as isize,
            lhs_rs as isize,
            rhs,
            rhs_cs as isize,
            rhs_rs as isize,
            0.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// The parent's forward as products: the output `[batch, seq_q, M]` and the weights.
pub(super) fn forward(shape: Shape, q: &[f32], k: &[f32], v: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let Shape { batch, seq_q, seq_k, width, heads, row_stride, kv_stride, .. } = shape;
    let (q_extent, kv_extent) = (shape.extent(seq_q), shape.extent(seq_k));
    let lens = [batch * seq_q * width, batch * seq_q * heads * seq_k];
    let ([out, weights], _) =
        par_fill(lens, [seq_q * width, seq_q * heads * seq_k], 1, |b, [out, weights]| {
            let entry = Entry {
                q: &q[b * seq_q * row_stride..][..q_extent],
                k: &k[b * kv_stride..][..kv_extent],
                v: &v[b * kv_stride..][..kv_extent],
            };
            entry_forward(shape, entry, out, weights)
        });
    (out, weights)
}

avx2_dispatch! {
    /// One batch entry of [`forward`]: `out` `[seq_q, M]`, `weights` `[seq_q, heads, seq_k]`.
    fn entry_forward = entry_forward_body(shape: Shape, entry: Entry, out: &mut [f32], weights: &mut [f32])
}

#[inline(always)]
fn entry_forward_body(shape: Shape, entry: Entry, out: &mut [f32], weights: &mut [f32]) {
    let Shape { seq_q: sq, seq_k: sk, width: m, heads, row_stride: rs, .. } = shape;
    let d = shape.head_dim();
    let w_rs = heads * sk;
    assert!(out.len() == sq * m && weights.len() == sq * w_rs, "attention products: entry buffers");
    for h in 0..heads {
        // SAFETY: the head's q and k rows lie inside `entry` (extents checked by the slicing in
        // `forward`); row i of this head's weights is weights[i·w_rs + h·sk ..][..sk].
        unsafe {
            // S = scale · q_h · k_hᵀ  [sq, sk]
            product(
                [sq, sk, d],
                weights[h * sk..].as_mut_ptr(),
                w_rs,
                entry.q[h * d..].as_ptr(),
                [rs, 1],
                entry.k[h * d..].as_ptr(),
                [1, rs],
                shape.scale(),
            );
        }
        for i in 0..sq {
            let row = &mut weights[i * w_rs + h * sk..][..sk];
            let visible = shape.visible(i);
            row[visible..].fill(0.0);
            let live = &mut row[..visible];
            let top = max(live);
            live.iter_mut().for_each(|w| *w = exp_f32(*w - top));
            let total = sum(live);
            live.iter_mut().for_each(|w| *w /= total);
        }
        // SAFETY: P is this entry's weights (as above); v's head rows lie inside `entry.v`;
        // row i of the head's output is out[i·m + h·d ..][..d].
        unsafe {
            // out_h = P · v_h  [sq, d]
            product(
                [sq, d, sk],
                out[h * d..].as_mut_ptr(),
                m,
                weights[h * sk..].as_ptr(),
                [w_rs, 1],
                entry.v[h * d..].as_ptr(),
                [rs, 1],
                1.0,
            );
        }
    }
}

/// Batch entry `b` of the parent's backward as products: `weights` starts at the entry's
/// weights, `g` is the whole output gradient `[batch, seq_q, M]`.
#[inline(always)]
pub(super) fn entry_backward(
    shape: Shape,
    entry: Entry,
    weights: &[f32],
    g: &[f32],
    b: usize,
    mut grads: GradRows,
) {
    let Shape { seq_q: sq, seq_k: sk, width: m, heads, row_stride: rs, .. } = shape;
    let (d, scale) = (shape.head_dim(), shape.scale());
    let w_rs = heads * sk;
    let g = &g[b * sq * m..][..sq * m];
    let weights = &weights[..sq * w_rs];
    assert!(
        entry.q.len() >= shape.extent(sq)
            && entry.k.len() >= shape.extent(sk)
            && entry.v.len() >= shape.extent(sk),
        "attention products: entry operands"
    );
    // ∂P, then ∂S in place, for one head: [sq, sk].
    let mut ds = vec![0.0f32; sq * sk];
    for h in 0..heads {
        let [(dq, dq_rs), (dk, dk_rs), (dv, dv_rs)] = grads.head_blocks(h, shape);
        let (p, g_h) = (weights[h * sk..].as_ptr(), g[h * d..].as_ptr());
        // SAFETY: P's rows are weights[i·w_rs + h·sk ..][..sk] (inside `weights`); g's head rows
        // g[i·m + h·d ..][..d]; the operands' head rows lie inside `entry` (checked above); the
        // gradient blocks were checked by `head_blocks`; `ds` is [sq, sk].
        unsafe {
            // ∂v_h = Pᵀ · g_h  [sk, d]
            product([sk, d, sq], dv, dv_rs, p, [1, w_rs], g_h, [m, 1], 1.0);
            // ∂P = g_h · v_hᵀ  [sq, sk]
            product([sq, sk, d], ds.as_mut_ptr(), sk, g_h, [m, 1], entry.v[h * d..].as_ptr(), [1, rs], 1.0);
        }
        // ∂S_ij = scale · P_ij (∂P_ij − Σ_j' P_ij' ∂P_ij'), zero where masked (P is zero there).
        for i in 0..sq {
            let p_row = &weights[i * w_rs + h * sk..][..sk];
            let ds_row = &mut ds[i * sk..][..sk];
            let visible = shape.visible(i);
            let centre = dot(&p_row[..visible], &ds_row[..visible]);
            ds_row[visible..].fill(0.0);
            for (s, &pj) in ds_row[..visible].iter_mut().zip(p_row) {
                *s = scale * pj * (*s - centre);
            }
        }
        // SAFETY: as above.
        unsafe {
            // ∂q_h = ∂S · k_h  [sq, d]
            product([sq, d, sk], dq, dq_rs, ds.as_ptr(), [sk, 1], entry.k[h * d..].as_ptr(), [rs, 1], 1.0);
            // ∂k_h = ∂Sᵀ · q_h  [sk, d]
            product([sk, d, sq], dk, dk_rs, ds.as_ptr(), [1, sk], entry.q[h * d..].as_ptr(), [rs, 1], 1.0);
        }
    }
}
