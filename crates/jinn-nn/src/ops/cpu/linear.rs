//! A dense layer `y = x·W + b` as one differentiable op on the CPU backend.
//!
//! Burn 0.22 runs a `Linear` on flex as a matmul into a freshly zeroed output that is then
//! copied once more into an aligned buffer (flex's `FlexTensor::empty`), followed by a separate
//! bias-add pass; its backward does the same for both gradient matmuls and sums the bias
//! gradient in yet another pass. [`affine`] registers the layer as one op through a Burn
//! backend extension: the forward writes the bias rows once and accumulates `x·W` onto them
//! with a single `gemm` call; the backward computes `g·Wᵀ` and `xᵀ·g` with `gemm` reading the
//! transposes in place (no copies) into buffers it never zeroes, and the bias gradient in one
//! pass.
//!
//! Written by hand because Burn's autodiff has no fused dense-layer op; the matrix products
//! are the `gemm` crate's (the one flex itself uses).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{DType, Tensor, TensorData};
use rayon::prelude::*;

use super::math::f32_storage;

/// `x·W + b` for `x` `[rows, M_in]`, `W` `[M_in, M_out]`, `b` `[M_out]` as one fused op (see
/// the module docs): one `Linear`'s weight and bias, or several layers' side by side. CPU
/// backend, f32 only.
pub(in crate::ops) fn affine(x: Tensor<2>, weight: Tensor<2>, bias: Tensor<1>) -> Tensor<2> {
    let out = <Dispatch as FusedLinear>::fused_linear(
        x.into_dispatch(),
        weight.into_dispatch(),
        bias.into_dispatch(),
    );
    Tensor::from_dispatch(out)
}

/// The fused dense layer as a Burn backend extension (flex, and autodiff over flex), for f32
/// tensors (the door routes nothing else here).
#[backend_extension(Flex, Autodiff)]
pub trait FusedLinear: Backend {
    /// `x·W + b` for `x` `[rows, M_in]`, `W` `[M_in, M_out]`, `b` `[M_out]`.
    fn fused_linear(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

impl FusedLinear for Flex {
    fn fused_linear(x: FlexTensor, weight: FlexTensor, bias: FlexTensor) -> FlexTensor {
        let (x, weight, bias) = (Matrix::of(&x), Matrix::of(&weight), bias.to_contiguous());
        let (rows, d_out) = (x.rows, weight.cols);
        let bias = f32_storage(&bias);
        assert_eq!(bias.len(), d_out, "fused_linear: bias of {} for {d_out} outputs", bias.len());
        // [rows, M_out]: every row starts as the bias, then `x·W` is added onto it.
        let mut out = bias_rows(rows, bias);
        // SAFETY: `out` holds rows × M_out initialised f32 (row-major); x and W are valid views.
        unsafe { gemm_into(out.as_mut_ptr(), true, &x, &weight) };
        matrix_tensor(out, rows, d_out)
    }
}

/// The backward of the fused op; its state is the input and the weight.
#[derive(Debug)]
struct LinearBackward;

impl Backward<Flex, 3> for LinearBackward {
    type State = (FlexTensor, FlexTensor);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [x_node, weight_node, bias_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node); // [rows, M_out]
        let (x, weight) = ops.state;
        let g = Matrix::of(&grad);
        if let Some(node) = x_node {
            // ∂L/∂x = g·Wᵀ  [rows, M_in]
            let w = Matrix::of(&weight);
            grads.register::<Flex>(node.id, product(&g, &w.transposed()));
        }
        if let Some(node) = weight_node {
            // ∂L/∂W = xᵀ·g  [M_in, M_out]
            let x = Matrix::of(&x);
            grads.register::<Flex>(node.id, product(&x.transposed(), &g));
        }
        if let Some(node) = bias_node {
            // ∂L/∂b = Σ_rows g  [M_out]
            let grad = grad.to_contiguous();
            let sums = column_sums(f32_storage(&grad), g.cols);
            grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(sums, [g.cols])));
        }
    }
}

impl<C: CheckpointStrategy> FusedLinear for Autodiff<Flex, C> {
    fn fused_linear(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let nodes = [x.node(), weight.node(), bias.node()];
        let (x, weight, bias) = (x.into_primitive(), weight.into_primitive(), bias.into_primitive());
        match LinearBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = Flex::fused_linear(x.clone(), weight.clone(), bias);
                prep.finish((x, weight), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_linear(x, weight, bias)),
        }
    }
}

/// A 2-D f32 view of a flex tensor's storage: any strides, no copy.
struct Matrix<'a> {
    data: &'a [f32],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a> Matrix<'a> {
    /// The view of the 2-D f32 tensor `t`.
    fn of(t: &'a FlexTensor) -> Self {
        let layout = t.layout();
        assert!(t.dtype() == DType::F32, "fused_linear: f32 only, got {:?}", t.dtype());
        let (shape, strides) = (layout.shape(), layout.strides());
        assert_eq!(shape.num_dims(), 2, "fused_linear: 2-D operands only");
        Self {
            data: t.storage::<f32>(),
            offset: layout.start_offset(),
            rows: shape[0],
            cols: shape[1],
            row_stride: strides[0],
            col_stride: strides[1],
        }
    }

    /// The same storage read as the transpose.
    fn transposed(&self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..*self
        }
    }

    /// Pointer to element (0, 0).
    fn origin(&self) -> *const f32 {
        // In bounds: the layout's start offset lies inside its storage (flex's invariant).
        self.data[self.offset..].as_ptr()
    }
}

/// `lhs·rhs` into a new row-major `[lhs.rows, rhs.cols]` tensor.
fn product(lhs: &Matrix, rhs: &Matrix) -> FlexTensor {
    let (rows, cols) = (lhs.rows, rhs.cols);
    let mut out: Vec<f32> = Vec::with_capacity(rows * cols);
    // SAFETY: the capacity holds rows × cols f32; with `accumulate` false gemm writes every
    // element without reading any (its `alpha` is forced to zero), so all are initialised.
    unsafe {
        gemm_into(out.as_mut_ptr(), false, lhs, rhs);
        out.set_len(rows * cols);
    }
    matrix_tensor(out, rows, cols)
}

/// Products below this many multiply-adds run on one thread (flex's own threshold).
const PARALLEL_MIN_MACS: usize = 192 * 192 * 192;

/// `dst = [dst +] lhs·rhs` for a row-major contiguous `dst` `[lhs.rows, rhs.cols]`.
///
/// # Safety
/// `dst` must be valid for `lhs.rows × rhs.cols` writes (and reads, when `accumulate`), and not
/// overlap the operands' storage.
unsafe fn gemm_into(dst: *mut f32, accumulate: bool, lhs: &Matrix, rhs: &Matrix) {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    assert_eq!(k, rhs.rows, "fused_linear: inner dimensions {k} and {}", rhs.rows);
    let parallelism = if m.saturating_mul(n).saturating_mul(k) >= PARALLEL_MIN_MACS {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the caller's contract on `dst`; the operand views lie inside their storage.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            n as isize,
            accumulate,
            lhs.origin(),
            lhs.col_stride,
            lhs.row_stride,
            rhs.origin(),
            rhs.col_stride,
            rhs.row_stride,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        )
    }
}

/// Rows per rayon task of the row-wise passes.
const ROWS_PER_TASK: usize = 64;

/// `[rows, bias.len()]` row-major, every row a copy of `bias`: written in parallel, never
/// zeroed first (one vectorised copy per row).
fn bias_rows(rows: usize, bias: &[f32]) -> Vec<f32> {
    let (cols, len) = (bias.len(), rows * bias.len());
    let mut out: Vec<f32> = Vec::with_capacity(len);
    if cols > 0 {
        out.spare_capacity_mut()[..len].par_chunks_mut(ROWS_PER_TASK * cols).for_each(|task| {
            for row in task.chunks_exact_mut(cols) {
                row.write_copy_of_slice(bias);
            }
        });
    }
    // SAFETY: every one of the `len` elements was written just above (each task's length is a
    // whole number of rows).
    unsafe { out.set_len(len) };
    out
}

/// Column sums of the row-major `g` with `cols` columns. Partial sums over tasks of
/// [`ROWS_PER_TASK`] rows are added in task order, so the result does not depend on how rayon
/// splits the work.
fn column_sums(g: &[f32], cols: usize) -> Vec<f32> {
    let mut total = vec![0.0f32; cols];
    if cols == 0 {
        return total;
    }
    let partial: Vec<Vec<f32>> = g
        .par_chunks(ROWS_PER_TASK * cols)
        .map(|task| {
            let mut sums = vec![0.0f32; cols];
            for row in task.chunks_exact(cols) {
                sums.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
            sums
        })
        .collect();
    for sums in partial {
        total.iter_mut().zip(&sums).for_each(|(t, s)| *t += s);
    }
    total
}

/// A flex tensor `[rows, cols]` owning `data` (no copy).
fn matrix_tensor(data: Vec<f32>, rows: usize, cols: usize) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(data, [rows, cols]))
}

#[cfg(test)]
mod tests {
    use super::column_sums;

    #[test]
    fn column_sums_match_f64_loops() {
        let (rows, cols) = (197, 13);
        let g: Vec<f32> = (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        let sums = column_sums(&g, cols);
        for (c, got) in sums.iter().enumerate() {
            let want: f64 = (0..rows).map(|r| g[r * cols + c] as f64).sum();
            assert!((*got as f64 - want).abs() < 1e-3, "column {c}: {got} vs {want}");
        }
    }
}
