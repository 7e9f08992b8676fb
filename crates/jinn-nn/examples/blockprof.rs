use burn::tensor::{Device, Distribution, Tensor};
use jinn_nn::{gelu_tanh, linear_rows, AxialBlockConfig};
use std::time::Instant;

fn bench(name: &str, x: &Tensor<4>, f: &dyn Fn(Tensor<4>) -> Tensor<4>) {
    let g = Tensor::<4>::random(x.dims(), Distribution::Normal(0.0, 1.0), &x.device());
    let mut fwd = Vec::new();
    let mut tot = Vec::new();
    for _ in 0..15 {
        let xr = x.clone().detach().require_grad();
        let t = Instant::now();
        let out = f(xr.clone());
        let _ = out.clone().slice([0..1, 0..1, 0..1, 0..1]).into_data();
        fwd.push(t.elapsed().as_secs_f64());
        let grads = (out * g.clone()).sum().backward();
        let _ = xr.grad(&grads).unwrap().slice([0..1, 0..1, 0..1, 0..1]).into_data();
        tot.push(t.elapsed().as_secs_f64());
    }
    fwd.sort_by(|a, b| a.partial_cmp(b).unwrap());
    tot.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{name:>12}: fwd {:.2} ms, fwd+bwd {:.2} ms", fwd[7] * 1e3, tot[7] * 1e3);
}

fn main() {
    let d = Device::flex().autodiff();
    let blk = AxialBlockConfig::new(128, 512, 4).init(&d).unwrap();
    let x = Tensor::<4>::random([8, 16, 17, 128], Distribution::Normal(0.0, 1.0), &d);
    let [b, t, n, m] = [8, 16, 17, 128];
    bench("block", &x, &|x| blk.forward(x));
    bench("layernorm", &x, &|x| blk.norm_spatial.forward(x));
    bench("spatial", &x, &|x| {
        let h = blk.norm_spatial.forward(x.clone()).reshape([b * t, n, m]);
        x + blk.attn_spatial.forward(h).reshape([b, t, n, m])
    });
    bench("temporal", &x, &|x| {
        let h = blk.norm_temporal.forward(x.clone()).swap_dims(1, 2);
        let h = blk.attn_temporal.forward(h.reshape([b * n, t, m]));
        x + h.reshape([b, n, t, m]).swap_dims(1, 2)
    });
    bench("ffn", &x, &|x| {
        let h = linear_rows(&blk.ffn_in, blk.norm_ffn.forward(x.clone()));
        x + linear_rows(&blk.ffn_out, gelu_tanh(h))
    });
    bench("ffn-nogelu", &x, &|x| {
        let h = linear_rows(&blk.ffn_in, blk.norm_ffn.forward(x.clone()));
        x + linear_rows(&blk.ffn_out, h)
    });
    bench("qkv-only", &x, &|x| {
        let h = x.reshape([b * t, n, m]);
        let (q, k, v) = blk.attn_spatial.project_qkv(h);
        (q + k + v).reshape([b, t, n, m])
    });
    bench("linear128", &x, &|x| linear_rows(&blk.attn_spatial.query, x));
}
