//! The compute floor of a training step: its matmul work (counted from the model, see
//! `jinn_nn::flops`) at the best f32 matmul rate the backend reaches on the device, measured
//! here in-process.

use burn::tensor::{Device, Distribution, Tensor};
use std::time::{Duration, Instant};

/// Side of the square products the peak rate is measured on (large enough for any backend to
/// run at its best; 2 GFLOP each).
const SIDE: usize = 1024;

/// Products chained per timing, read back once (a GPU then pays one synchronisation for them).
const CHAIN: usize = 4;

/// Best f32 matmul rate of `device` in GFLOP/s: chains of `CHAIN` `SIDE`² products timed for
/// about `budget` after a warm-up, the fastest kept.
pub(super) fn matmul_peak_gflops(device: &Device, budget: Duration) -> f64 {
    let a = Tensor::<2>::random([SIDE, SIDE], Distribution::Default, device);
    // Entries in [0, 2/SIDE): every product keeps its values near those of `a`.
    let b = Tensor::<2>::random([SIDE, SIDE], Distribution::Uniform(0.0, 2.0 / SIDE as f64), device);
    let chain = || {
        let t = Instant::now();
        let mut x = a.clone();
        for _ in 0..CHAIN {
            x = x.matmul(b.clone()); // [SIDE, SIDE]
        }
        // Reading one number back makes asynchronous (GPU) backends finish the chain.
        let _ = x.slice([0..1, 0..1]).into_data();
        t.elapsed().as_secs_f64() / CHAIN as f64
    };
    chain();
    let start = Instant::now();
    let mut best = f64::INFINITY;
    while start.elapsed() < budget {
        best = best.min(chain());
    }
    2.0 * (SIDE as f64).powi(3) / best / 1e9
}

/// `x` with four significant digits (the tiny configs of the tests do µs of work).
fn four_digits(x: f64) -> String {
    let decimals = if x > 0.0 { (3 - x.log10().floor() as i32).max(0) as usize } else { 0 };
    format!("{x:.decimals$}")
}

/// Print the step's matmul work, the rate the step reached, and the floor that work sets at
/// `peak_gflops` (this backend's best matmul rate) next to `target_ms`.
pub(super) fn print(macs: u64, median_ms: f64, peak_gflops: f64, target_ms: f64) {
    let gflop = 2.0 * macs as f64 / 1e9;
    let achieved = gflop / (median_ms / 1e3);
    let floor_ms = gflop / peak_gflops * 1e3;
    println!(
        "matmul work: {} GFLOP/step (dense layers and attention, counted from the model); the step \
         ran at {} GFLOP/s, {:.0}% of this backend's f32 matmul peak ({peak_gflops:.1} GFLOP/s on \
         {SIDE}² products)",
        four_digits(gflop),
        four_digits(achieved),
        100.0 * achieved / peak_gflops
    );
    let needed = gflop / (target_ms / 1e3);
    let verdict = if needed > peak_gflops { ": unreachable with this backend's matmul" } else { "" };
    println!(
        "compute floor: {} ms/step (the matmuls alone at that peak); the {target_ms:.0} ms target needs \
         {} GFLOP/s over the whole step, {:.0}% of that peak{verdict}",
        four_digits(floor_ms),
        four_digits(needed),
        100.0 * needed / peak_gflops
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn four_significant_digits_at_every_scale() {
        for (x, s) in [(16.2834, "16.28"), (0.000123456, "0.0001235"), (1234.56, "1235"), (0.0, "0")] {
            assert_eq!(super::four_digits(x), s);
        }
    }
}
