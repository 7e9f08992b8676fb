use burn::tensor::{Device, Distribution, Tensor};
use std::time::Instant;

fn time<F: FnMut() -> Tensor<2>>(mut f: F) -> f64 {
    for _ in 0..3 {
        let _ = f();
    }
    let mut best = f64::INFINITY;
    for _ in 0..30 {
        let t = Instant::now();
        let y = f();
        let _ = y.slice([0..1, 0..1]).into_data();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let d = Device::flex();
    for &(m, k, n) in &[
        (1024usize, 1024usize, 1024usize),
        (2176, 128, 128),
        (2176, 128, 512),
        (2176, 512, 128),
        (2176, 128, 384),
        (2176, 768, 128),
        (2176, 128, 768),
    ] {
        let a = Tensor::<2>::random([m, k], Distribution::Default, &d);
        let b = Tensor::<2>::random([k, n], Distribution::Default, &d);
        let at = Tensor::<2>::random([k, m], Distribution::Default, &d);
        let bt = Tensor::<2>::random([n, k], Distribution::Default, &d);
        let fl = 2.0 * (m * k * n) as f64 / 1e9;
        let nn = time(|| a.clone().matmul(b.clone()));
        let tn = time(|| at.clone().transpose().matmul(b.clone()));
        let nt = time(|| a.clone().matmul(bt.clone().transpose()));
        // weight-gradient shape: [k, m]^T... x^T g : [K_in, rows] x [rows, N]
        let g = Tensor::<2>::random([m, n], Distribution::Default, &d);
        let wg = time(|| a.clone().transpose().matmul(g.clone()));
        println!(
            "{m}x{k}x{n}: NN {:.1}  TN {:.1}  NT {:.1}  xT*g {:.1} GFLOP/s  (NN {:.3} ms)",
            fl / nn,
            fl / tn,
            fl / nt,
            fl / wg,
            nn * 1e3
        );
    }
}
