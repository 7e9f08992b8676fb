use burn::tensor::{Device, Distribution, Tensor};
use jinn_nn::attention::attend;
use std::time::Instant;

fn main() {
    let d = Device::flex().autodiff();
    for &(b, s, causal) in &[(128usize, 17usize, false), (136, 16, true)] {
        let shape = [b, 4, s, 32];
        let mk = || Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &d).require_grad();
        let (q, k, v) = (mk(), mk(), mk());
        let g = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &d);
        let mut fwd = f64::INFINITY;
        let mut tot = f64::INFINITY;
        for _ in 0..20 {
            let t = Instant::now();
            let out = attend(q.clone(), k.clone(), v.clone(), causal);
            let _ = out.clone().slice([0..1, 0..1, 0..1, 0..1]).into_data();
            fwd = fwd.min(t.elapsed().as_secs_f64());
            let grads = (out * g.clone()).sum().backward();
            let _ = q.grad(&grads).unwrap().slice([0..1, 0..1, 0..1, 0..1]).into_data();
            tot = tot.min(t.elapsed().as_secs_f64());
        }
        println!("b={b} s={s} causal={causal}: fwd {:.2} ms, fwd+bwd {:.2} ms", fwd * 1e3, tot * 1e3);
    }
}
