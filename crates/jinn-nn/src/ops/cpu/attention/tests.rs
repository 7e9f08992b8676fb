use super::*;
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Distribution, Tolerance};

/// The same attention from Burn's basic tensor ops: heads split off, `q·kᵀ` scaled, keys after
/// the query position masked when `causal`, softmax, weighted sum, heads merged.
fn composite(q: Tensor<3>, k: Tensor<3>, v: Tensor<3>, heads: usize, causal: bool) -> Tensor<3> {
    let [b, sq, m] = q.dims();
    let sk = k.dims()[1];
    let split = |t: Tensor<3>, s| t.reshape([b, s, heads, m / heads]).swap_dims(1, 2); // [b, h, s, hd]
    let (q, k, v) = (split(q, sq), split(k, sk), split(v, sk));
    let scores = q.matmul(k.swap_dims(2, 3)) / ((m / heads) as f64).sqrt(); // [b, h, sq, sk]
    let scores = if causal {
        let mask: Vec<bool> = (0..sq * sk).map(|ij| ij % sk > ij / sk).collect();
        let mask = Tensor::<2, Bool>::from_data(TensorData::new(mask, [sq, sk]), &scores.device());
        scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
    } else {
        scores
    };
    softmax(scores, 3).matmul(v).swap_dims(1, 2).reshape([b, sq, m]) // [b, sq, m]
}

type Attention = fn(Tensor<3>, Tensor<3>, Tensor<3>, usize, bool) -> Tensor<3>;

/// Value and the gradients of `Σ w·f(q, k, v)` for q, k and v.
fn value_and_grads(
    f: Attention,
    [q, k, v]: &[Tensor<3>; 3],
    w: &Tensor<3>,
    heads: usize,
    causal: bool,
) -> [TensorData; 4] {
    let [q, k, v] = [q, k, v].map(|t| t.clone().detach().require_grad());
    let out = f(q.clone(), k.clone(), v.clone(), heads, causal);
    let grads = (out.clone() * w.clone()).sum().backward();
    [
        out.into_data(),
        q.grad(&grads).unwrap().into_data(),
        k.grad(&grads).unwrap().into_data(),
        v.grad(&grads).unwrap().into_data(),
    ]
}

/// The fused op against the composite, value and every gradient, for `batch` entries of
/// `seq_q` queries over `seq_k` keys of width `m` in `heads` heads.
fn assert_matches_composite([batch, seq_q, seq_k, m]: [usize; 4], heads: usize, causal: bool) {
    let device = Device::flex().autodiff();
    let random = |s| Tensor::<3>::random([batch, s, m], Distribution::Normal(0.0, 1.5), &device);
    let operands = [random(seq_q), random(seq_k), random(seq_k)];
    let w = random(seq_q);
    let fused = value_and_grads(attention, &operands, &w, heads, causal);
    let reference = value_and_grads(composite, &operands, &w, heads, causal);
    for (what, (a, b)) in ["out", "dq", "dk", "dv"].iter().zip(fused.iter().zip(&reference)) {
        assert!(
            a.clone().try_to_vec::<f32>().is_ok_and(|v| v.iter().all(|x| x.is_finite())),
            "{what} not finite"
        );
        a.assert_approx_eq::<f32>(b, Tolerance::absolute(1e-4));
    }
}

#[test]
fn self_attention_matches_the_composite() {
    assert_matches_composite([3, 17, 17, 12], 3, false);
}

#[test]
fn causal_self_attention_matches_the_composite() {
    assert_matches_composite([5, 16, 16, 8], 2, true);
}

#[test]
fn cross_attention_of_fewer_queries_matches_the_composite() {
    // One query row per entry over seven keys (the LAM's action slot), and a causal call
    // with fewer keys than queries (later queries see every key).
    assert_matches_composite([4, 1, 7, 8], 2, false);
    assert_matches_composite([2, 6, 4, 8], 1, true);
}

#[test]
fn heads_of_whole_and_partial_vector_blocks_match_the_composite() {
    // Head widths 32 (four blocks of 8 lanes, the jasmine-small width) and 12 (one block and a
    // tail of 4), causal and not, with more keys than queries.
    assert_matches_composite([2, 9, 9, 64], 2, true);
    assert_matches_composite([2, 5, 7, 24], 2, false);
    assert_matches_composite([2, 5, 7, 24], 2, true);
}

#[test]
fn frame_long_sequences_match_the_composite() {
    // Spatial attention over a frame: 64 keys (8×8 patches), 43 (a row count that is no
    // multiple of the vector width), causal and not, and fewer queries than keys.
    assert_matches_composite([2, 64, 64, 64], 2, false);
    assert_matches_composite([2, 43, 43, 48], 3, true);
    assert_matches_composite([3, 4, 43, 16], 2, false);
    assert_packed_matches_separate([2, 43, 16], 2, true);
}

#[test]
fn the_untracked_op_matches_the_composite() {
    let device = Device::flex();
    let random = |s| Tensor::<3>::random([2, s, 8], Distribution::Normal(0.0, 1.0), &device);
    let (q, k, v) = (random(5), random(5), random(5));
    let fused = attention(q.clone(), k.clone(), v.clone(), 4, true).into_data();
    fused.assert_approx_eq::<f32>(&composite(q, k, v, 4, true).into_data(), Tolerance::absolute(1e-5));
}

#[test]
fn keys_and_values_read_in_place_from_a_longer_buffer_match_the_composite() {
    // A KV cache's window: frames 0..5 of buffers holding 9, read without a copy.
    let device = Device::flex();
    let random = |s| Tensor::<3>::random([3, s, 16], Distribution::Normal(0.0, 1.0), &device);
    let (q, k_buffer, v_buffer) = (random(2), random(9), random(9));
    let window = |t: Tensor<3>| t.slice([0..3, 0..5, 0..16]);
    let fused = attention(q.clone(), window(k_buffer.clone()), window(v_buffer.clone()), 4, false);
    let copies = |t: Tensor<3>| Tensor::<3>::from_data(window(t).into_data(), &device);
    let reference = composite(q.clone(), copies(k_buffer.clone()), copies(v_buffer.clone()), 4, false);
    fused.into_data().assert_approx_eq::<f32>(&reference.clone().into_data(), Tolerance::absolute(1e-5));
    // Keys as a window, values contiguous: laid out differently, so both are copied first.
    let mixed = attention(q, window(k_buffer), copies(v_buffer), 4, false);
    mixed.into_data().assert_approx_eq::<f32>(&reference.into_data(), Tolerance::absolute(1e-5));
}

#[test]
fn masked_weights_are_zero_and_rows_sum_to_one() {
    let shape = Shape {
        batch: 2,
        seq_q: 4,
        seq_k: 4,
        kv_stride: 24,
        row_stride: 6,
        width: 6,
        heads: 2,
        causal: true,
    };
    let data = |n: usize, seed: usize| -> Vec<f32> {
        (0..n).map(|i| (((i + seed) * 7919) % 97) as f32 / 40.0 - 1.2).collect()
    };
    let (q, k, v) = (data(48, 1), data(48, 2), data(48, 3));
    let (out, weights) = attention_forward(shape, &q, &k, &v);
    assert_eq!(out.len(), 48);
    // Rows of the weights run over (batch, query, head).
    for (r, row) in weights.chunks(4).enumerate() {
        let i = r / 2 % 4;
        assert!(row[i + 1..].iter().all(|w| *w == 0.0), "row {r}: {row:?}");
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6, "row {r}: {row:?}");
    }
}

/// The packed op on `[q | k | v]` rows against the op on the three parts: value, and the
/// gradient of the packed input against the three gradients.
fn assert_packed_matches_separate([batch, seq, m]: [usize; 3], heads: usize, causal: bool) {
    let device = Device::flex().autodiff();
    let random = |w| Tensor::<3>::random([batch, seq, w], Distribution::Normal(0.0, 1.5), &device);
    let (qkv, w) = (random(3 * m).require_grad(), random(m));
    let packed = attention_packed(qkv.clone(), heads, causal);
    let grads = (packed.clone() * w.clone()).sum().backward();
    let d_packed = qkv.grad(&grads).unwrap();
    let part = |t: Tensor<3>, i: usize| t.slice([0..batch, 0..seq, i * m..(i + 1) * m]);
    let parts = [0, 1, 2].map(|i| part(qkv.clone().detach(), i));
    let separate = value_and_grads(attention, &parts, &w, heads, causal);
    let packed_grads = [0, 1, 2].map(|i| part(d_packed.clone(), i).into_data());
    let tolerance = Tolerance::absolute(1e-5);
    packed.into_data().assert_approx_eq::<f32>(&separate[0], tolerance);
    for (what, (a, b)) in ["dq", "dk", "dv"].iter().zip(packed_grads.iter().zip(&separate[1..])) {
        assert_eq!(a.shape(), b.shape(), "{what}: shape");
        a.assert_approx_eq::<f32>(b, tolerance);
    }
}

#[test]
fn packed_self_attention_matches_the_separate_op() {
    assert_packed_matches_separate([3, 17, 12], 3, false);
    assert_packed_matches_separate([4, 16, 8], 2, true);
    assert_packed_matches_separate([2, 1, 8], 4, true);
}

/// Values in [-1.2, 1.2] from a fixed pattern (no generator: the two paths see the same bits).
fn pattern(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + seed) * 7919) % 97) as f32 / 40.0 - 1.2).collect()
}

/// Largest absolute difference, asserted below `tolerance`.
fn assert_close(what: &str, a: &[f32], b: &[f32], tolerance: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst < tolerance, "{what}: differs by {worst}");
}

#[test]
fn matrix_products_match_the_row_kernel() {
    // Frame-long self-attention (packed and separate, causal and not), cross-attention with
    // more keys than queries, and keys read from a window of a longer buffer.
    for (batch, seq_q, seq_k, width, heads, causal) in [
        (3, 64, 64, 128, 4, false),
        (2, 43, 43, 48, 3, true),
        (2, 40, 70, 32, 2, true),
        (3, 33, 64, 16, 1, false),
    ] {
        let separate = Shape {
            batch,
            seq_q,
            seq_k,
            kv_stride: (seq_k + 5) * width,
            row_stride: width,
            width,
            heads,
            causal,
        };
        let (q, k, v) = (
            pattern(batch * seq_q * width, 1),
            pattern(batch * (seq_k + 5) * width, 2),
            pattern(batch * (seq_k + 5) * width, 3),
        );
        let (out_rows, w_rows) = rows_forward(separate, &q, &k, &v);
        let (out, w) = products::forward(separate, &q, &k, &v);
        let case = format!("{batch}×{seq_q}→{seq_k}, width {width}, {heads} heads, causal {causal}");
        assert_close(&format!("{case}: out"), &out, &out_rows, 1e-5);
        assert_close(&format!("{case}: weights"), &w, &w_rows, 1e-6);

        // The backward on contiguous operands.
        let contiguous = Shape { kv_stride: seq_k * width, ..separate };
        let (k, v) = (pattern(batch * seq_k * width, 2), pattern(batch * seq_k * width, 3));
        let g = pattern(batch * seq_q * width, 4);
        let (_, w) = rows_forward(contiguous, &q, &k, &v);
        let by_rows = backward_separate(contiguous, [&q, &k, &v], &w, &g, false);
        let by_products = backward_separate(contiguous, [&q, &k, &v], &w, &g, true);
        for (what, (a, b)) in ["dq", "dk", "dv"].iter().zip(by_products.iter().zip(&by_rows)) {
            assert_close(&format!("{case}: {what}"), a, b, 1e-5);
        }

        if seq_q == seq_k {
            let packed = Shape { kv_stride: seq_q * 3 * width, row_stride: 3 * width, ..contiguous };
            let qkv = pattern(batch * seq_q * 3 * width, 5);
            let (out_rows, w) = rows_forward(packed, &qkv, &qkv[width..], &qkv[2 * width..]);
            let (out, _) = products::forward(packed, &qkv, &qkv[width..], &qkv[2 * width..]);
            assert_close(&format!("{case}: packed out"), &out, &out_rows, 1e-5);
            let by_rows = backward_packed(packed, &qkv, &w, &g, false);
            let by_products = backward_packed(packed, &qkv, &w, &g, true);
            assert_close(&format!("{case}: packed dqkv"), &by_products, &by_rows, 1e-5);
        }
    }
}
