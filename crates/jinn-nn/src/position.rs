//! Fixed sinusoidal spatio-temporal positional encoding (as Jasmine's `jasmine/utils/nn.py`).
//!
//! One table `PE[pos, 2i] = sin(pos·ω_i)`, `PE[pos, 2i+1] = cos(pos·ω_i)`,
//! `ω_i = exp(−2i·ln(10000)/M)`, serves both the frame index t and the token index n:
//! `x[b, t, n, :] += PE[t] + PE[n]`. It is not learned. Jasmine's table has 5000 rows; this
//! one is computed for exactly the positions needed, so there is no length limit.

use burn::tensor::{Device, Tensor, TensorData};

/// Sinusoid table `[len, dim]` (computed in f64, stored as f32).
pub fn sinusoid_table(len: usize, dim: usize, device: &Device) -> Tensor<2> {
    let mut table = vec![0.0f32; len * dim]; // [len, dim]
    let ln_base = 10000f64.ln();
    for pos in 0..len {
        for j in 0..dim {
            let two_i = (j - j % 2) as f64;
            let angle = pos as f64 * (-two_i * ln_base / dim as f64).exp();
            table[pos * dim + j] = if j.is_multiple_of(2) { angle.sin() } else { angle.cos() } as f32;
        }
    }
    Tensor::from_data(TensorData::new(table, [len, dim]), device)
}

/// Adds `PE[t] + PE[n]` to every token of `x` `[B, T, N, M]`.
pub fn add_spatiotemporal_pe(x: Tensor<4>) -> Tensor<4> {
    let [_, t, n, m] = x.dims();
    // The table takes x's dtype (f32, or bf16 under `train.precision = "bf16"`).
    let table = sinusoid_table(t.max(n), m, &x.device()).cast(x.dtype()); // [max(t, n), m]
    let pe_t = table.clone().slice([0..t, 0..m]).reshape([1, t, 1, m]); // [1, t, 1, m]
    let pe_n = table.slice([0..n, 0..m]).reshape([1, 1, n, m]); // [1, 1, n, m]
    x + pe_t + pe_n // [b, t, n, m]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec formula, written independently in f64.
    fn naive_pe(pos: usize, j: usize, m: usize) -> f64 {
        let i = (j / 2) as f64;
        let omega = (-2.0 * i * 10000f64.ln() / m as f64).exp();
        if j.is_multiple_of(2) {
            (pos as f64 * omega).sin()
        } else {
            (pos as f64 * omega).cos()
        }
    }

    #[test]
    fn added_encoding_matches_naive_formula() {
        let device = Device::flex();
        let (b, t, n, m) = (2, 5, 7, 12);
        let x: Vec<f32> = (0..b * t * n * m).map(|i| (i % 13) as f32 * 0.1).collect();
        let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [b, t, n, m]), &device);
        let y: Vec<f32> = add_spatiotemporal_pe(xt).try_into_vec_as::<f32>().unwrap();
        for bi in 0..b {
            for ti in 0..t {
                for ni in 0..n {
                    for j in 0..m {
                        let idx = ((bi * t + ti) * n + ni) * m + j;
                        let want = x[idx] as f64 + naive_pe(ti, j, m) + naive_pe(ni, j, m);
                        assert!((y[idx] as f64 - want).abs() < 1e-5, "at {bi},{ti},{ni},{j}");
                    }
                }
            }
        }
    }

    #[test]
    fn long_table_matches_formula_at_large_positions() {
        let device = Device::flex();
        let m = 32;
        let table: Vec<f32> = sinusoid_table(4000, m, &device).try_into_vec_as::<f32>().unwrap();
        for pos in [0, 1, 999, 3999] {
            for j in 0..m {
                let want = naive_pe(pos, j, m);
                assert!((table[pos * m + j] as f64 - want).abs() < 1e-6, "pos {pos} j {j}");
            }
        }
    }
}
