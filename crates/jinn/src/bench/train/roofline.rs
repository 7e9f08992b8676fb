//! The compute floor of a training step: its matmul work (counted from the model, see
//! `jinn_nn::flops`) at the best f32 matmul rate the backend reaches on the device, measured
//! here in-process.

use anyhow::{anyhow, bail};
use burn::tensor::{Device, Distribution, FloatDType, Tensor};
use std::time::{Duration, Instant};

/// Side of the square products `jinn bench train` measures the peak rate on (2 GFLOP each:
/// enough for a CPU; `jinn bench gpu` takes a larger side that fills a GPU).
pub(crate) const SIDE: usize = 1024;

/// Products chained per timing (a GPU then pays one synchronisation for them).
const CHAIN: usize = 4;

/// Best matmul rate of `device` in GFLOP/s on `side`² products in `dtype`: chains of `CHAIN`
/// products timed for about `budget` after a warm-up, the fastest kept. Each timing ends when
/// the device has finished its work (`Device::sync`), and the products are checked: with `a`
/// in [0, 1) and `b` in [0, 2/side), every product keeps its entries near 0.5, so their mean
/// tells a computed chain from one the backend skipped or cut short.
pub(crate) fn matmul_peak(
    device: &Device,
    side: usize,
    dtype: FloatDType,
    budget: Duration,
) -> anyhow::Result<f64> {
    let sync = || device.sync().map_err(|e| anyhow!("device {device:?}: {e:?}"));
    let a = Tensor::<2>::random([side, side], Distribution::Default, device).cast(dtype);
    let b =
        Tensor::<2>::random([side, side], Distribution::Uniform(0.0, 2.0 / side as f64), device).cast(dtype);
    let chain = || -> anyhow::Result<(f64, Tensor<2>)> {
        sync()?;
        let t = Instant::now();
        let mut x = a.clone();
        for _ in 0..CHAIN {
            x = x.matmul(b.clone()); // [side, side]
        }
        sync()?;
        Ok((t.elapsed().as_secs_f64() / CHAIN as f64, x))
    };
    let check = |x: Tensor<2>| -> anyhow::Result<()> {
        let mean = x.cast(FloatDType::F32).mean().into_scalar::<f32>();
        if !(0.4..=0.6).contains(&mean) {
            bail!("the {side}² {dtype:?} matmuls on {device:?} read back a mean of {mean}, not ≈ 0.5: the device did not compute them");
        }
        Ok(())
    };
    check(chain()?.1)?;
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut last = None;
    while start.elapsed() < budget || last.is_none() {
        let (seconds, x) = chain()?;
        best = best.min(seconds);
        last = Some(x);
    }
    check(last.expect("one timed chain"))?;
    Ok(2.0 * (side as f64).powi(3) / best / 1e9)
}

/// [`matmul_peak`] in f32 on [`SIDE`]² products: the baseline of `jinn bench train`.
pub(super) fn matmul_peak_gflops(device: &Device, budget: Duration) -> anyhow::Result<f64> {
    matmul_peak(device, SIDE, FloatDType::F32, budget)
}

/// `x` with four significant digits (the tiny configs of the tests do µs of work).
pub(crate) fn four_digits(x: f64) -> String {
    let decimals = if x > 0.0 { (3 - x.log10().floor() as i32).max(0) as usize } else { 0 };
    format!("{x:.decimals$}")
}

/// Print the step's matmul work, the rate the step reached, and the floor that work sets at
/// `peak_gflops` (this backend's best matmul rate), next to `target_ms` where there is one.
pub(super) fn print(macs: u64, median_ms: f64, peak_gflops: f64, target_ms: Option<f64>) {
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
    let floor = format!("compute floor: {} ms/step (the matmuls alone at that peak)", four_digits(floor_ms));
    let Some(target_ms) = target_ms else {
        println!("{floor}");
        return;
    };
    let needed = gflop / (target_ms / 1e3);
    let verdict = if needed > peak_gflops { ": unreachable with this backend's matmul" } else { "" };
    println!(
        "{floor}; the {target_ms:.0} ms target needs {} GFLOP/s over the whole step, {:.0}% of that \
         peak{verdict}",
        four_digits(needed),
        100.0 * needed / peak_gflops
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_matmul_peak_is_measured_on_checked_products() {
        let gflops = matmul_peak(&Device::flex(), 256, FloatDType::F32, Duration::from_millis(50)).unwrap();
        // A 2-core CPU runs f32 matmuls at a few to a few hundred GFLOP/s; nothing reaches 100 TFLOP/s.
        assert!(gflops > 0.1 && gflops < 1e5, "{gflops} GFLOP/s");
    }

    #[test]
    fn four_significant_digits_at_every_scale() {
        for (x, s) in [(16.2834, "16.28"), (0.000123456, "0.0001235"), (1234.56, "1235"), (0.0, "0")] {
            assert_eq!(super::four_digits(x), s);
        }
    }
}
