//! Multi-head scaled dot-product attention as one differentiable op on the CPU backend.
//!
//! Under autodiff Burn 0.22 runs attention as its composite fallback: the heads are split off
//! by a permute and a reshape (a copy), `q·kᵀ` is a batched matmul into a fresh buffer, then
//! scale, mask, a five-pass softmax, a second batched matmul and the permute back, and the
//! backward is as many passes again. For the short sequences of an axial transformer (16 or
//! 17 tokens) almost none of that time is arithmetic. [`attention`] reads the queries, keys and
//! values in the projections' own layout `[batch, seq, heads·head_dim]`, computes every head of
//! a batch entry in one pass (scores, softmax, weighted sum), keeps the attention weights for
//! the backward, and writes its output in the layout the output projection reads.
//! [`attention_packed`] does the same on one projection's packed `[q | k | v]` rows and returns
//! their gradient as one tensor.
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

use super::fill::par_fill;
use super::math::{avx2_dispatch, dot, exp_f32, f32_storage, max, sum, LANES};

/// Attention of the rows of `q` `[batch, seq_q, M]` over those of `k` and `v`
/// `[batch, seq_k, M]`, in `heads` heads of `M / heads` features each (head-major, as the
/// projections lay them out) → `[batch, seq_q, M]`, heads concatenated. Scores are scaled by
/// `1/√head_dim`; `causal` hides key `j` from query `i` when `j > i`. CPU backend, f32 only.
pub(in crate::ops) fn attention(
    q: Tensor<3>,
    k: Tensor<3>,
    v: Tensor<3>,
    heads: usize,
    causal: bool,
) -> Tensor<3> {
    let out = <Dispatch as FusedAttention>::fused_attention(
        q.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        heads,
        causal,
    );
    Tensor::from_dispatch(out)
}

/// Self-attention of packed projections `qkv` `[batch, seq, 3·M]`, each row `[q | k | v]` (one
/// dense layer with the three projections side by side) → `[batch, seq, M]`, as [`attention`]
/// of the three parts. Its backward yields the gradient of `qkv` as one tensor, so the packed
/// projection's backward is one matmul per gradient instead of three matmuls and two sums.
/// CPU backend, f32 only.
pub(in crate::ops) fn attention_packed(qkv: Tensor<3>, heads: usize, causal: bool) -> Tensor<3> {
    Tensor::from_dispatch(<Dispatch as FusedAttention>::fused_attention_packed(
        qkv.into_dispatch(),
        heads,
        causal,
    ))
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

    /// See [`attention_packed`].
    fn fused_attention_packed(qkv: FloatTensor<Self>, heads: usize, causal: bool) -> FloatTensor<Self>;
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

    fn fused_attention_packed(qkv: FlexTensor, heads: usize, causal: bool) -> FlexTensor {
        forward_packed(&qkv.to_contiguous(), heads, causal).0
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
    let (out, weights) =
        attention_forward(shape, f32_storage(q), storage_from_start(k), storage_from_start(v));
    let dims = [shape.batch, shape.seq_q, shape.width];
    (FlexTensor::from_data(TensorData::new(out, dims)), weights)
}

/// The forward on a contiguous packed `qkv` `[batch, seq, 3·M]`: the output and the weights.
fn forward_packed(qkv: &FlexTensor, heads: usize, causal: bool) -> (FlexTensor, Vec<f32>) {
    let shape = Shape::packed(qkv, heads, causal);
    let m = shape.width;
    let data = f32_storage(qkv);
    let (out, weights) =
        attention_forward(shape, data, &data[m.min(data.len())..], &data[(2 * m).min(data.len())..]);
    let dims = [shape.batch, shape.seq_q, m];
    (FlexTensor::from_data(TensorData::new(out, dims)), weights)
}

/// The backward of the packed op; its state is `qkv` (contiguous) and the weights.
#[derive(Debug)]
struct PackedAttentionBackward;

impl Backward<Flex, 1> for PackedAttentionBackward {
    type State = (FlexTensor, Vec<f32>, usize, bool);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [qkv_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node).to_contiguous(); // [batch, seq, M]
        let (qkv, weights, heads, causal) = ops.state;
        if let Some(node) = qkv_node {
            let shape = Shape::packed(&qkv, heads, causal);
            let dqkv = attention_backward_packed(shape, f32_storage(&qkv), &weights, f32_storage(&grad));
            let dims = qkv.layout().shape().clone();
            grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(dqkv, dims)));
        }
    }
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
        let [dq, dk, dv] = attention_backward(
            shape,
            [f32_storage(&q), f32_storage(&k), f32_storage(&v)],
            &weights,
            f32_storage(&grad),
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

    fn fused_attention_packed(qkv: FloatTensor<Self>, heads: usize, causal: bool) -> FloatTensor<Self> {
        let nodes = [qkv.node()];
        let qkv = qkv.into_primitive().to_contiguous();
        match PackedAttentionBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, weights) = forward_packed(&qkv, heads, causal);
                prep.finish((qkv, weights, heads, causal), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward_packed(&qkv, heads, causal).0),
        }
    }
}

/// The sizes of one attention call.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shape {
    /// Batch entries.
    batch: usize,
    /// Query rows per entry.
    seq_q: usize,
    /// Key / value rows per entry.
    seq_k: usize,
    /// Elements between the first key (value) rows of consecutive entries: `seq_k · M` when
    /// contiguous, more for windows of a longer buffer.
    kv_stride: usize,
    /// Elements between consecutive rows of `q`, `k` and `v`: `M` for separate operands,
    /// `3·M` for packed `[q | k | v]` rows.
    row_stride: usize,
    /// Row width `M` (all heads).
    width: usize,
    /// Heads; `width / heads` features each.
    heads: usize,
    /// Whether key `j` is hidden from query `i` when `j > i`.
    causal: bool,
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
            row_stride: qd[2],
            width: qd[2],
            heads,
            causal,
        }
    }

    /// The shape of the packed call on `qkv` `[batch, seq, 3·M]`.
    fn packed(qkv: &FlexTensor, heads: usize, causal: bool) -> Self {
        let d = qkv.layout().shape();
        assert!(
            d.num_dims() == 3 && d[2].is_multiple_of(3),
            "fused_attention_packed: [batch, seq, 3·M], got {d:?}"
        );
        let m = d[2] / 3;
        assert!(heads > 0 && m.is_multiple_of(heads), "fused_attention_packed: {heads} heads for width {m}");
        Self {
            batch: d[0],
            seq_q: d[1],
            seq_k: d[1],
            kv_stride: d[1] * d[2],
            row_stride: d[2],
            width: m,
            heads,
            causal,
        }
    }

    /// Elements from the first to past the last element of one entry's `seq` operand rows.
    fn extent(&self, seq: usize) -> usize {
        if seq == 0 {
            0
        } else {
            (seq - 1) * self.row_stride + self.width
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

/// The forward over `q` `[batch, seq_q, M]` and `k`, `v` `[batch, seq_k, M]`, rows
/// [`Shape::row_stride`] apart (entries of `q` `seq_q` rows apart, of `k` and `v`
/// [`Shape::kv_stride`] apart): the output `[batch, seq_q, M]` and the attention weights
/// `[batch, seq_q, heads, seq_k]` (zero where masked). Query rows run in parallel, so one long
/// sequence (a sampler's frame, batch 1) uses every core too.
/// Long sequences run as matrix products ([`products`]), the rest row by row.
fn attention_forward(shape: Shape, q: &[f32], k: &[f32], v: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let Shape { batch, seq_q, seq_k, width, heads, .. } = shape;
    let rows = batch * seq_q;
    if rows == 0 || seq_k == 0 || width == 0 {
        return (vec![0.0; rows * width], vec![0.0; rows * heads * seq_k]);
    }
    if products::applies(shape) {
        products::forward(shape, q, k, v)
    } else {
        rows_forward(shape, q, k, v)
    }
}

/// [`attention_forward`] one query row at a time (non-empty operands).
fn rows_forward(shape: Shape, q: &[f32], k: &[f32], v: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let Shape { batch, seq_q, seq_k, width, heads, row_stride, .. } = shape;
    let rows = batch * seq_q;
    let (stride, k_extent) = (shape.kv_stride, shape.extent(seq_k));
    let keys_t = (seq_q >= TRANSPOSE_MIN_QUERIES).then(|| transpose_heads(shape, k));
    let block = width * seq_k;
    let lens = [rows * width, rows * heads * seq_k];
    let ([out, weights], _) = par_fill(lens, [width, heads * seq_k], ROWS_PER_TASK, |r, [out, weights]| {
        let (b, i) = (r / seq_q, r % seq_q);
        let (k, v) = (&k[b * stride..][..k_extent], &v[b * stride..][..k_extent]);
        let keys_t = keys_t.as_deref().map(|kt| &kt[b * block..][..block]);
        row_forward(shape, i, Entry { q: &q[r * row_stride..][..width], k, v }, keys_t, out, weights)
    });
    (out, weights)
}

/// Query rows from which the forward first transposes the keys: a transposed head lets one
/// query's scores over all keys accumulate in vector registers (one pass over its `head_dim`
/// features) instead of one horizontal dot product per key. A single query row (a sampler's
/// step over a KV cache) reads the keys in place.
const TRANSPOSE_MIN_QUERIES: usize = 4;

/// The keys `k` (rows [`Shape::row_stride`] apart, entries [`Shape::kv_stride`] apart) as
/// `[batch, heads, head_dim, seq_k]`.
fn transpose_heads(shape: Shape, k: &[f32]) -> Vec<f32> {
    let Shape { batch, seq_k, width, heads, row_stride, kv_stride, .. } = shape;
    let d = shape.head_dim();
    let block = width * seq_k;
    let ([kt], _) = par_fill([batch * block], [block], 1, |b, [kt]| {
        for h in 0..heads {
            transpose_head(&k[b * kv_stride..], row_stride, h, d, &mut kt[h * d * seq_k..][..d * seq_k]);
        }
    });
    kt
}

/// Head `h` (`d` features) of the rows of `block` (`stride` apart) into `dst` `[d, seq]`, where
/// `seq = dst.len() / d`.
#[inline(always)]
fn transpose_head(block: &[f32], stride: usize, h: usize, d: usize, dst: &mut [f32]) {
    let seq = dst.len() / d.max(1);
    for j in 0..seq {
        for (c, &x) in head_row(block, stride, j, h, d).iter().enumerate() {
            dst[c * seq + j] = x;
        }
    }
}

/// The backward of [`attention_forward`] on separate contiguous operands: from `[q, k, v]`,
/// the weights and the output gradient `g` `[batch, seq_q, M]`, returns `[∂q, ∂k, ∂v]`. Per
/// head, with weights `P` and scale `s`: `∂v = Pᵀ·g`, `∂P = g·vᵀ`,
/// `∂S = P ⊙ (∂P − rowsum(P ⊙ ∂P))`, `∂q = s·∂S·k`, `∂k = s·∂Sᵀ·q`.
fn attention_backward(shape: Shape, operands: [&[f32]; 3], weights: &[f32], g: &[f32]) -> [Vec<f32>; 3] {
    backward_separate(shape, operands, weights, g, products::applies(shape))
}

/// [`attention_backward`], as matrix products or row by row.
fn backward_separate(
    shape: Shape,
    [q, k, v]: [&[f32]; 3],
    weights: &[f32],
    g: &[f32],
    by_products: bool,
) -> [Vec<f32>; 3] {
    let Shape { batch, seq_q, seq_k, width, .. } = shape;
    let (q_len, k_len) = (seq_q * width, seq_k * width);
    assert!(
        shape.row_stride == width && (batch <= 1 || shape.kv_stride == k_len),
        "attention_backward: contiguous operands"
    );
    if q_len == 0 || k_len == 0 || batch == 0 {
        return [vec![0.0; batch * q_len], vec![0.0; batch * k_len], vec![0.0; batch * k_len]];
    }
    let lens = [batch * q_len, batch * k_len, batch * k_len];
    let (grads, _) = par_fill(lens, [q_len, k_len, k_len], 1, |b, [dq, dk, dv]| {
        let entry =
            Entry { q: &q[b * q_len..][..q_len], k: &k[b * k_len..][..k_len], v: &v[b * k_len..][..k_len] };
        let weights = &weights[b * seq_q * shape.heads * seq_k..];
        entry_backward(shape, entry, weights, g, b, GradRows::Separate([dq, dk, dv]), by_products)
    });
    grads
}

/// The backward of the packed forward (`q`, `k`, `v` the thirds of each row of `qkv`
/// `[batch, seq, 3·M]`): the gradient of `qkv`, rows `[∂q | ∂k | ∂v]`.
fn attention_backward_packed(shape: Shape, qkv: &[f32], weights: &[f32], g: &[f32]) -> Vec<f32> {
    backward_packed(shape, qkv, weights, g, products::applies(shape))
}

/// [`attention_backward_packed`], as matrix products or row by row.
fn backward_packed(shape: Shape, qkv: &[f32], weights: &[f32], g: &[f32], by_products: bool) -> Vec<f32> {
    let Shape { batch, seq_q, seq_k, width, row_stride, .. } = shape;
    let block = seq_q * row_stride;
    if block == 0 || batch == 0 || width == 0 {
        return vec![0.0; batch * block];
    }
    let ([dqkv], _) = par_fill([batch * block], [block], 1, |b, [d]| {
        let rows = &qkv[b * block..][..block];
        let entry = Entry { q: rows, k: &rows[width..], v: &rows[2 * width..] };
        let weights = &weights[b * seq_q * shape.heads * seq_k..];
        entry_backward(shape, entry, weights, g, b, GradRows::Packed(d), by_products)
    });
    dqkv
}

/// Where the backward writes one batch entry's `∂q`, `∂k` and `∂v`.
enum GradRows<'a> {
    /// Three row-major blocks `[seq_q, M]`, `[seq_k, M]`, `[seq_k, M]`.
    Separate([&'a mut [f32]; 3]),
    /// One block `[seq, 3·M]`, each row `[∂q | ∂k | ∂v]`.
    Packed(&'a mut [f32]),
}

impl GradRows<'_> {
    /// Head `h` of row `row` of the gradient of operand `which` (0 `q`, 1 `k`, 2 `v`).
    #[inline(always)]
    fn head(&mut self, which: usize, row: usize, h: usize, shape: Shape) -> &mut [f32] {
        let (m, d) = (shape.width, shape.head_dim());
        match self {
            GradRows::Separate(blocks) => &mut blocks[which][row * m + h * d..][..d],
            GradRows::Packed(block) => &mut block[row * 3 * m + which * m + h * d..][..d],
        }
    }

    /// Head `h` of the gradients of `q`, `k` and `v` as (first element, row stride): rows
    /// `seq_q`, `seq_k` and `seq_k` of `head_dim` elements each, checked to lie inside the
    /// blocks. The three pointers come from one borrow, so writing through all three is sound.
    fn head_blocks(&mut self, h: usize, shape: Shape) -> [(*mut f32, usize); 3] {
        let (m, d) = (shape.width, shape.head_dim());
        let rows = [shape.seq_q, shape.seq_k, shape.seq_k];
        let fits = |len: usize, offset: usize, stride: usize, rows: usize| {
            assert!(
                rows == 0 || (rows - 1) * stride + offset + d <= len,
                "attention: gradient block too short"
            );
        };
        match self {
            GradRows::Separate(blocks) => std::array::from_fn(|which| {
                fits(blocks[which].len(), h * d, m, rows[which]);
                // SAFETY: in bounds (checked just above).
                (unsafe { blocks[which].as_mut_ptr().add(h * d) }, m)
            }),
            GradRows::Packed(block) => {
                let (len, base) = (block.len(), block.as_mut_ptr());
                std::array::from_fn(|which| {
                    fits(len, which * m + h * d, 3 * m, rows[which]);
                    // SAFETY: in bounds (checked just above).
                    (unsafe { base.add(which * m + h * d) }, 3 * m)
                })
            }
        }
    }
}

/// One batch entry's operands (in the forward, `q` is the one query row at hand).
#[derive(Clone, Copy)]
struct Entry<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
}

/// Features of head `h` (`d` wide) in row `row` of a block whose rows are `stride` apart.
#[inline(always)]
fn head_row(block: &[f32], stride: usize, row: usize, h: usize, d: usize) -> &[f32] {
    &block[row * stride + h * d..][..d]
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
    /// Query row `i` of one batch entry, every head: `entry.q` is that row, `keys_t` the
    /// entry's keys transposed (`[heads, head_dim, seq_k]`, see [`transpose_heads`]) when
    /// given, `out` its output row and `weights` its `[heads, seq_k]` attention weights.
    fn row_forward = row_forward_body(
        shape: Shape,
        i: usize,
        entry: Entry,
        keys_t: Option<&[f32]>,
        out: &mut [f32],
        weights: &mut [f32],
    )
}

#[inline(always)]
fn row_forward_body(
    shape: Shape,
    i: usize,
    entry: Entry,
    keys_t: Option<&[f32]>,
    out: &mut [f32],
    weights: &mut [f32],
) {
    let (d, scale, sk) = (shape.head_dim(), shape.scale(), shape.seq_k);
    let visible = shape.visible(i);
    for (h, row) in weights.chunks_exact_mut(sk).enumerate() {
        let qi = &entry.q[h * d..][..d];
        match keys_t {
            // Every key's score (vectorised over keys); the hidden ones are zeroed below.
            Some(kt) => combine_rows(row, qi, |c| &kt[(h * d + c) * sk..][..sk]),
            None => {
                for (j, w) in row[..visible].iter_mut().enumerate() {
                    *w = dot(qi, head_row(entry.k, shape.row_stride, j, h, d));
                }
            }
        }
        row[visible..].fill(0.0);
        // Softmax over the visible keys, each pass vectorised.
        let live = &mut row[..visible];
        live.iter_mut().for_each(|w| *w *= scale);
        let top = max(live);
        live.iter_mut().for_each(|w| *w = exp_f32(*w - top));
        let total = sum(live);
        live.iter_mut().for_each(|w| *w /= total);
        combine_rows(&mut out[h * d..][..d], &row[..visible], |j| {
            head_row(entry.v, shape.row_stride, j, h, d)
        });
    }
}

avx2_dispatch! {
    /// Batch entry `b` of the backward, every head, as matrix products ([`products`]) or row by
    /// row: `weights` and `g` start at entry `b`'s weights and at the whole output gradient.
    fn entry_backward = entry_backward_body(
        shape: Shape,
        entry: Entry,
        weights: &[f32],
        g: &[f32],
        b: usize,
        grads: GradRows,
        by_products: bool,
    )
}

#[inline(always)]
fn entry_backward_body(
    shape: Shape,
    entry: Entry,
    weights: &[f32],
    g: &[f32],
    b: usize,
    grads: GradRows,
    by_products: bool,
) {
    if by_products {
        products::entry_backward(shape, entry, weights, g, b, grads)
    } else {
        rows_entry_backward(shape, entry, weights, g, b, grads)
    }
}

/// [`entry_backward`] row by row.
#[inline(always)]
fn rows_entry_backward(
    shape: Shape,
    entry: Entry,
    weights: &[f32],
    g: &[f32],
    b: usize,
    mut grads: GradRows,
) {
    let (m, d, scale, stride) = (shape.width, shape.head_dim(), shape.scale(), shape.row_stride);
    let (sq, sk) = (shape.seq_q, shape.seq_k);
    let g = &g[b * sq * m..][..sq * m];
    // Per head: ∂S and P transposed, [seq_k, seq_q] (zero where masked: written only where
    // visible, and every head has the same mask).
    let (mut ds_t, mut p_t) = (vec![0.0f32; sk * sq], vec![0.0f32; sk * sq]);
    let (mut dp, mut ds) = (vec![0.0f32; sk], vec![0.0f32; sk]);
    // The head's values transposed, [head_dim, seq_k]: ∂P's row is then one vectorised pass.
    let mut v_t = vec![0.0f32; d * sk];
    for h in 0..shape.heads {
        transpose_head(entry.v, stride, h, d, &mut v_t);
        for i in 0..sq {
            let p = &weights[(i * shape.heads + h) * sk..][..sk];
            let visible = shape.visible(i);
            let gi = head_row(g, m, i, h, d);
            // ∂P_ij = g_i·v_j (every key; the hidden ones are not read), and the row's
            // Σ_j P_ij ∂P_ij.
            combine_rows(&mut dp, gi, |c| &v_t[c * sk..][..sk]);
            let centre: f32 = (0..visible).map(|j| p[j] * dp[j]).sum();
            for j in 0..visible {
                ds[j] = p[j] * (dp[j] - centre) * scale;
                ds_t[j * sq + i] = ds[j];
                p_t[j * sq + i] = p[j];
            }
            // ∂q_i = Σ_j ∂S_ij·k_j
            combine_rows(grads.head(0, i, h, shape), &ds[..visible], |j| head_row(entry.k, stride, j, h, d));
        }
        for j in 0..sk {
            // Queries before a key never see it under the causal mask.
            let first = if shape.causal { j.min(sq) } else { 0 };
            let (ds_col, p_col) = (&ds_t[j * sq + first..(j + 1) * sq], &p_t[j * sq + first..(j + 1) * sq]);
            // ∂k_j = Σ_i ∂S_ij·q_i, ∂v_j = Σ_i P_ij·g_i
            combine_rows(grads.head(1, j, h, shape), ds_col, |t| head_row(entry.q, stride, first + t, h, d));
            combine_rows(grads.head(2, j, h, shape), p_col, |t| head_row(g, m, first + t, h, d));
        }
    }
}

mod products;
#[cfg(test)]
mod tests;
