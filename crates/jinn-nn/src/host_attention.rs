//! Multi-head scaled dot-product attention as one differentiable op on the CPU backend.
//!
//! Under autodiff Burn 0.22 runs attention as its composite fallback: the heads are split off
//! by a permute and a reshape (a copy), `q·kᵀ` is a batched matmul into a fresh buffer, then
//! scale, mask, a five-pass softmax, a second batched matmul and the permute back, and the
//! backward is as many passes again. For the short sequences of an axial transformer (16 or
//! 17 tokens) almost none of that time is arithmetic. [`attention`] reads the queries, keys and
//! values in the projections' own layout `[batch, seq, heads·head_dim]`, computes every head of
//! a batch entry in one pass (scores, softmax, weighted sum), keeps the attention weights for
//! the backward, and writes its output in the layout the output projection reads. GPU backends
//! keep Burn's op ([`crate::attention::attend`]).
//!
//! Written by hand because Burn's autodiff has no fused attention backward.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

use crate::host_math::{avx2_dispatch, dot, f32_storage, LANES};

/// Attention of the rows of `q` `[batch, seq_q, M]` over those of `k` and `v`
/// `[batch, seq_k, M]`, in `heads` heads of `M / heads` features each (head-major, as the
/// projections lay them out) → `[batch, seq_q, M]`, heads concatenated. Scores are scaled by
/// `1/√head_dim`; `causal` hides key `j` from query `i` when `j > i`. CPU backend, f32 only
/// (callers check [`crate::host_math::runs_on_host`]).
pub fn attention(q: Tensor<3>, k: Tensor<3>, v: Tensor<3>, heads: usize, causal: bool) -> Tensor<3> {
    let out = <Dispatch as FusedAttention>::fused_attention(
        q.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        heads,
        causal,
    );
    Tensor::from_dispatch(out)
}

/// The fused attention as a Burn backend extension (flex, and autodiff over flex), for f32
/// tensors.
#[backend_extension(Flex, Autodiff)]
pub trait FusedAttention: Backend {
    /// See [`attention`].
    fn fused_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        heads: usize,
        causal: bool,
    ) -> FloatTensor<Self>;
}

impl FusedAttention for Flex {
    fn fused_attention(
        q: FlexTensor,
        k: FlexTensor,
        v: FlexTensor,
        heads: usize,
        causal: bool,
    ) -> FlexTensor {
        // Keys and values may be windows of a larger buffer (a KV cache): read in place when
        // both are laid out alike.
        let (mut k, mut v) = (with_contiguous_rows(k), with_contiguous_rows(v));
        if k.layout().strides() != v.layout().strides() {
            (k, v) = (k.to_contiguous(), v.to_contiguous());
        }
        forward(&q.to_contiguous(), &k, &v, heads, causal).0
    }
}

/// `t` `[batch, seq, M]` itself when its rows are contiguous and its batch entries do not
/// overlap (any batch stride of at least `seq·M`, as a window `[.., 0..seq, ..]` of a longer
/// buffer has), else a contiguous copy.
fn with_contiguous_rows(t: FlexTensor) -> FlexTensor {
    let (dims, strides) = (t.layout().shape(), t.layout().strides());
    let rows_contiguous = dims.num_dims() == 3
        && (dims[2] <= 1 || strides[2] == 1)
        && (dims[1] <= 1 || strides[1] == dims[2] as isize)
        && (dims[0] <= 1 || strides[0] >= (dims[1] * dims[2]) as isize);
    if rows_contiguous {
        t
    } else {
        t.to_contiguous()
    }
}

/// Elements between batch entries of `t` (see [`with_contiguous_rows`]).
fn batch_stride(t: &FlexTensor) -> usize {
    let (dims, strides) = (t.layout().shape(), t.layout().strides());
    if dims[0] <= 1 {
        dims[1] * dims[2]
    } else {
        strides[0] as usize
    }
}

/// The f32 storage of `t` from its first element on.
fn storage_from_start(t: &FlexTensor) -> &[f32] {
    &t.storage::<f32>()[t.layout().start_offset()..]
}

/// The forward on a contiguous `q` and on `k`, `v` with contiguous rows (see
/// [`with_contiguous_rows`]; equal strides): the output and the attention weights
/// `[batch, seq_q, heads, seq_k]`.
fn forward(
    q: &FlexTensor,
    k: &FlexTensor,
    v: &FlexTensor,
    heads: usize,
    causal: bool,
) -> (FlexTensor, Vec<f32>) {
    let shape = Shape::of(q, k, heads, causal);
    assert_eq!(k.layout().strides(), v.layout().strides(), "fused_attention: keys and values laid out alike");
    let mut out = vec![0.0f32; shape.batch * shape.seq_q * shape.width];
    let weights =
        attention_forward(shape, f32_storage(q), storage_from_start(k), storage_from_start(v), &mut out);
    let dims = [shape.batch, shape.seq_q, shape.width];
    (FlexTensor::from_data(TensorData::new(out, dims)), weights)
}

/// The backward of the fused op; its state is `q`, `k`, `v` (contiguous) and the weights.
#[derive(Debug)]
struct AttentionBackward;

impl Backward<Flex, 3> for AttentionBackward {
    type State = (FlexTensor, FlexTensor, FlexTensor, Vec<f32>, usize, bool);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [q_node, k_node, v_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node).to_contiguous(); // [batch, seq_q, M]
        let (q, k, v, weights, heads, causal) = ops.state;
        let shape = Shape::of(&q, &k, heads, causal);
        let (q_dims, k_dims) = (q.layout().shape().clone(), k.layout().shape().clone());
        let (mut dq, mut dk, mut dv) = (
            vec![0.0; q_dims.num_elements()],
            vec![0.0; k_dims.num_elements()],
            vec![0.0; k_dims.num_elements()],
        );
        attention_backward(
            shape,
            [f32_storage(&q), f32_storage(&k), f32_storage(&v)],
            &weights,
            f32_storage(&grad),
            [&mut dq, &mut dk, &mut dv],
        );
        for (node, data, dims) in [(q_node, dq, q_dims), (k_node, dk, k_dims.clone()), (v_node, dv, k_dims)] {
            if let Some(node) = node {
                grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(data, dims)));
            }
        }
    }
}

impl<C: CheckpointStrategy> FusedAttention for Autodiff<Flex, C> {
    fn fused_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        heads: usize,
        causal: bool,
    ) -> FloatTensor<Self> {
        let nodes = [q.node(), k.node(), v.node()];
        let q = q.into_primitive().to_contiguous();
        let k = k.into_primitive().to_contiguous();
        let v = v.into_primitive().to_contiguous();
        match AttentionBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, weights) = forward(&q, &k, &v, heads, causal);
                prep.finish((q, k, v, weights, heads, causal), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(&q, &k, &v, heads, causal).0),
        }
    }
}

/// The sizes of one attention call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Batch entries.
    pub batch: usize,
    /// Query rows per entry.
    pub seq_q: usize,
    /// Key / value rows per entry.
    pub seq_k: usize,
    /// Elements between the first key (value) rows of consecutive entries: `seq_k · M` when
    /// contiguous, more for windows of a longer buffer.
    pub kv_stride: usize,
    /// Row width `M` (all heads).
    pub width: usize,
    /// Heads; `width / heads` features each.
    pub heads: usize,
    /// Whether key `j` is hidden from query `i` when `j > i`.
    pub causal: bool,
}

impl Shape {
    /// The shape of the call on `q` `[batch, seq_q, M]` and `k` `[batch, seq_k, M]`.
    fn of(q: &FlexTensor, k: &FlexTensor, heads: usize, causal: bool) -> Self {
        let (qd, kd) = (q.layout().shape(), k.layout().shape());
        assert!(qd.num_dims() == 3 && kd.num_dims() == 3, "fused_attention: 3-D operands");
        assert!(qd[0] == kd[0] && qd[2] == kd[2], "fused_attention: q {qd:?} against k {kd:?}");
        assert!(
            heads > 0 && qd[2].is_multiple_of(heads),
            "fused_attention: {heads} heads for width {}",
            qd[2]
        );
        Self {
            batch: qd[0],
            seq_q: qd[1],
            seq_k: kd[1],
            kv_stride: batch_stride(k),
            width: qd[2],
            heads,
            causal,
        }
    }

    fn head_dim(&self) -> usize {
        self.width / self.heads
    }

    /// Keys visible to query `i`.
    fn visible(&self, i: usize) -> usize {
        if self.causal {
            (i + 1).min(self.seq_k)
        } else {
            self.seq_k
        }
    }

    fn scale(&self) -> f32 {
        1.0 / (self.head_dim() as f32).sqrt()
    }
}

/// The forward over row-major `q` `[batch, seq_q, M]` (contiguous) and `k`, `v`
/// `[batch, seq_k, M]` (entries [`Shape::kv_stride`] apart):
/// writes the output into `out` `[batch, seq_q, M]` and returns the attention weights
/// `[batch, seq_q, heads, seq_k]` (zero where masked). Query rows run in parallel, so one long
/// sequence (a sampler's frame, batch 1) uses every core too.
pub fn attention_forward(shape: Shape, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) -> Vec<f32> {
    let Shape { seq_q, seq_k, width, heads, .. } = shape;
    let (q_len, k_len, w_len) = (seq_q * width, seq_k * width, heads * seq_q * seq_k);
    let mut weights = vec![0.0f32; shape.batch * w_len];
    if q_len == 0 || k_len == 0 {
        return weights;
    }
    let stride = shape.kv_stride;
    out.par_chunks_mut(width)
        .zip(weights.par_chunks_mut(heads * seq_k))
        .zip(q.par_chunks(width))
        .enumerate()
        .with_min_len(ROWS_PER_TASK)
        .for_each(|(r, ((out, weights), q))| {
            let (b, i) = (r / seq_q, r % seq_q);
            let (k, v) = (&k[b * stride..][..k_len], &v[b * stride..][..k_len]);
            row_forward(shape, i, Entry { q, k, v }, out, weights)
        });
    weights
}

/// The backward of [`attention_forward`]: from its operands `[q, k, v]`, its weights and the
/// output gradient `g` `[batch, seq_q, M]`, writes `[∂q, ∂k, ∂v]` (every element). Per
/// head, with weights `P` and scale `s`: `∂v = Pᵀ·g`, `∂P = g·vᵀ`,
/// `∂S = P ⊙ (∂P − rowsum(P ⊙ ∂P))`, `∂q = s·∂S·k`, `∂k = s·∂Sᵀ·q`.
pub fn attention_backward(
    shape: Shape,
    [q, k, v]: [&[f32]; 3],
    weights: &[f32],
    g: &[f32],
    [dq, dk, dv]: [&mut [f32]; 3],
) {
    let Shape { seq_q, seq_k, width, heads, .. } = shape;
    let (q_len, k_len, w_len) = (seq_q * width, seq_k * width, heads * seq_q * seq_k);
    assert!(shape.batch <= 1 || shape.kv_stride == k_len, "attention_backward: contiguous keys and values");
    if q_len == 0 || k_len == 0 {
        return;
    }
    let inputs = q.par_chunks(q_len).zip(k.par_chunks(k_len)).zip(v.par_chunks(k_len));
    let grads_in = weights.par_chunks(w_len).zip(g.par_chunks(q_len));
    let grads_out = dq.par_chunks_mut(q_len).zip(dk.par_chunks_mut(k_len)).zip(dv.par_chunks_mut(k_len));
    inputs.zip(grads_in).zip(grads_out).for_each(|((((q, k), v), (weights, g)), ((dq, dk), dv))| {
        entry_backward(shape, Entry { q, k, v }, weights, g, [dq, dk, dv])
    });
}

/// One batch entry's operands (in the forward, `q` is the one query row at hand).
#[derive(Clone, Copy)]
struct Entry<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
}

/// Features of head `h` in the row `row` of a `[seq, M]` block.
#[inline(always)]
fn head_row(block: &[f32], shape: Shape, row: usize, h: usize) -> &[f32] {
    let (m, d) = (shape.width, shape.head_dim());
    &block[row * m + h * d..row * m + (h + 1) * d]
}

/// `out[c] = Σ_t w[t]·row(t)[c]` for every column `c` of `out`: one pass over the rows per block
/// of columns, the block's sums held in vector registers (accumulating into `out` row by row
/// would load and store it once per row). Blocks of four vectors first, so four independent
/// additions overlap; then single vectors, then the scalar tail.
#[inline(always)]
fn combine_rows<'a>(out: &mut [f32], w: &[f32], row: impl Fn(usize) -> &'a [f32]) {
    let wide = out.len() / WIDE * WIDE;
    let narrow = out.len() / LANES * LANES;
    for c in (0..wide).step_by(WIDE) {
        combine_block::<WIDE>(&mut out[c..c + WIDE], w, |t| &row(t)[c..c + WIDE]);
    }
    for c in (wide..narrow).step_by(LANES) {
        combine_block::<LANES>(&mut out[c..c + LANES], w, |t| &row(t)[c..c + LANES]);
    }
    for (c, o) in out.iter_mut().enumerate().skip(narrow) {
        *o = w.iter().enumerate().map(|(t, &wt)| wt * row(t)[c]).sum();
    }
}

/// Columns per wide block of [`combine_rows`]: four vectors.
const WIDE: usize = 4 * LANES;

/// [`combine_rows`] on one block of `N` columns (`out` and every `row(t)` exactly `N` long).
#[inline(always)]
fn combine_block<'a, const N: usize>(out: &mut [f32], w: &[f32], row: impl Fn(usize) -> &'a [f32]) {
    let mut acc = [0.0f32; N];
    for (t, &wt) in w.iter().enumerate() {
        let src: &[f32; N] = row(t).try_into().expect("N columns");
        for lane in 0..N {
            acc[lane] += wt * src[lane];
        }
    }
    out.copy_from_slice(&acc);
}

/// Query rows per rayon task of the forward (each row is every head's scores over the keys).
const ROWS_PER_TASK: usize = 8;

avx2_dispatch! {
    /// Query row `i` of one batch entry, every head: `entry.q` is that row, `out` its output
    /// row and `weights` its `[heads, seq_k]` attention weights.
    fn row_forward = row_forward_body(shape: Shape, i: usize, entry: Entry, out: &mut [f32], weights: &mut [f32])
}

#[inline(always)]
fn row_forward_body(shape: Shape, i: usize, entry: Entry, out: &mut [f32], weights: &mut [f32]) {
    let (d, scale) = (shape.head_dim(), shape.scale());
    let visible = shape.visible(i);
    for (h, row) in weights.chunks_exact_mut(shape.seq_k).enumerate() {
        let qi = &entry.q[h * d..][..d];
        let mut max = f32::NEG_INFINITY;
        for (j, w) in row[..visible].iter_mut().enumerate() {
            *w = scale * dot(qi, head_row(entry.k, shape, j, h));
            max = max.max(*w);
        }
        let mut total = 0.0f32;
        for w in &mut row[..visible] {
            *w = (*w - max).exp();
            total += *w;
        }
        row[..visible].iter_mut().for_each(|w| *w /= total);
        combine_rows(&mut out[h * d..][..d], &row[..visible], |j| head_row(entry.v, shape, j, h));
    }
}

avx2_dispatch! {
    /// One batch entry of the backward, every head.
    fn entry_backward = entry_backward_body(
        shape: Shape,
        entry: Entry,
        weights: &[f32],
        g: &[f32],
        grads: [&mut [f32]; 3],
    )
}

#[inline(always)]
fn entry_backward_body(
    shape: Shape,
    entry: Entry,
    weights: &[f32],
    g: &[f32],
    [dq, dk, dv]: [&mut [f32]; 3],
) {
    let (m, d, scale) = (shape.width, shape.head_dim(), shape.scale());
    let (sq, sk) = (shape.seq_q, shape.seq_k);
    // Per head: ∂S and P transposed, [seq_k, seq_q] (zero where masked: written only where
    // visible, and every head has the same mask).
    let (mut ds_t, mut p_t) = (vec![0.0f32; sk * sq], vec![0.0f32; sk * sq]);
    let (mut dp, mut ds) = (vec![0.0f32; sk], vec![0.0f32; sk]);
    for h in 0..shape.heads {
        for i in 0..sq {
            let p = &weights[(i * shape.heads + h) * sk..][..sk];
            let visible = shape.visible(i);
            let gi = head_row(g, shape, i, h);
            // ∂P_ij = g_i·v_j, and the row's Σ_j P_ij ∂P_ij.
            let mut centre = 0.0f32;
            for (j, dpj) in dp[..visible].iter_mut().enumerate() {
                *dpj = dot(gi, head_row(entry.v, shape, j, h));
                centre += p[j] * *dpj;
            }
            for j in 0..visible {
                ds[j] = p[j] * (dp[j] - centre) * scale;
                ds_t[j * sq + i] = ds[j];
                p_t[j * sq + i] = p[j];
            }
            // ∂q_i = Σ_j ∂S_ij·k_j
            combine_rows(&mut dq[i * m + h * d..][..d], &ds[..visible], |j| head_row(entry.k, shape, j, h));
        }
        for j in 0..sk {
            // Queries before a key never see it under the causal mask.
            let first = if shape.causal { j.min(sq) } else { 0 };
            let (ds_col, p_col) = (&ds_t[j * sq + first..(j + 1) * sq], &p_t[j * sq + first..(j + 1) * sq]);
            // ∂k_j = Σ_i ∂S_ij·q_i, ∂v_j = Σ_i P_ij·g_i
            combine_rows(&mut dk[j * m + h * d..][..d], ds_col, |t| head_row(entry.q, shape, first + t, h));
            combine_rows(&mut dv[j * m + h * d..][..d], p_col, |t| head_row(g, shape, first + t, h));
        }
    }
}

#[cfg(test)]
mod tests;
