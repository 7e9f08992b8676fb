use super::*;
use crate::diffusion::tests::tiny_diffusion;
use burn::tensor::Distribution;

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

fn model(levels: usize) -> DiffusionDynamics {
    let device = Device::flex();
    device.seed(13);
    tiny_diffusion(levels).init_diffusion(6, 4, &device).unwrap()
}

#[test]
fn context_level_matches_the_reference_default() {
    // As `GenieDiffusion.sample`: c_f = 0.1 of K = 64 gives level 58 (τ_c = 0.90625).
    assert_eq!(context_level(0.1, 64), 58);
    assert_eq!(context_level(0.0, 64), 63, "clamped below K");
    assert_eq!(context_level(1.0, 64), 0);
    assert_eq!(context_level(0.5, 4), 2);
}

#[test]
fn the_update_stays_on_the_interpolation_line_and_ends_at_the_prediction() {
    // If x lies at level τ on the line from ε to x̂, one step lands at level τ' on that line
    // (the deterministic DDIM / flow property), and the last step returns x̂.
    let device = Device::flex();
    let levels = 5;
    let eps = Tensor::<3>::random([2, 3, 4], Distribution::Normal(0.0, 1.0), &device);
    let target = Tensor::<3>::random([2, 3, 4], Distribution::Uniform(-1.0, 1.0), &device);
    let (ev, tv) = (floats(eps.clone()), floats(target.clone()));
    for k in 0..levels {
        let tau = k as f64 / levels as f64;
        let x = eps.clone().mul_scalar(1.0 - tau) + target.clone().mul_scalar(tau);
        let next = floats(denoise_step(x, target.clone(), k, levels));
        let tau1 = (k + 1) as f64 / levels as f64;
        for i in 0..next.len() {
            let want = (1.0 - tau1) * ev[i] as f64 + tau1 * tv[i] as f64;
            assert!((next[i] as f64 - want).abs() < 1e-5, "k {k}, entry {i}: {} vs {want}", next[i]);
        }
    }
    // From pure noise, K steps with a fixed prediction end exactly at it.
    let mut x = eps;
    for k in 0..levels {
        x = denoise_step(x, target.clone(), k, levels);
    }
    assert!(floats(x).iter().zip(&tv).all(|(a, b)| (a - b).abs() < 1e-5));
}

#[test]
fn cached_rollout_equals_uncached_and_keeps_the_context() {
    let device = Device::flex();
    let dynamics = model(4);
    let (b, c, s, n, l) = (2, 2, 5, 3, 6);
    let context = Tensor::<4>::random([b, c, n, l], Distribution::Uniform(-1.0, 1.0), &device);
    let actions = Tensor::<3>::random([b, s - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    let cfg = SamplerConfig { seed: 3, ..SamplerConfig::default() };
    let cached = sample_diffusion(&dynamics, context.clone(), actions.clone(), s, &cfg).unwrap();
    assert_eq!(cached.dims(), [b, s, n, l]);
    let plain = sample_diffusion(
        &dynamics,
        context.clone(),
        actions.clone(),
        s,
        &SamplerConfig { use_cache: false, ..cfg.clone() },
    )
    .unwrap();
    let (a, p) = (floats(cached.clone()), floats(plain));
    let worst = a.iter().zip(&p).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "cached vs uncached: max |Δ| = {worst}");
    // The context comes back unchanged; the generated frames are not copies of it.
    let ctx = floats(context);
    for bi in 0..b {
        assert_eq!(&a[bi * s * n * l..(bi * s + c) * n * l], &ctx[bi * c * n * l..(bi + 1) * c * n * l]);
    }
    // Same seed, same rollout; another seed, another one.
    let again = floats(
        sample_diffusion(
            &dynamics,
            Tensor::from_data(TensorData::new(ctx.clone(), [b, c, n, l]), &device),
            actions.clone(),
            s,
            &cfg,
        )
        .unwrap(),
    );
    assert_eq!(again, a);
    let other = SamplerConfig { seed: 4, ..cfg };
    let ctx_t = Tensor::from_data(TensorData::new(ctx, [b, c, n, l]), &device);
    assert_ne!(floats(sample_diffusion(&dynamics, ctx_t, actions, s, &other).unwrap()), a);
}

#[test]
fn bad_requests_are_clear_errors() {
    let device = Device::flex();
    let dynamics = model(4);
    let context = Tensor::<4>::zeros([1, 1, 3, 6], &device);
    let actions = Tensor::<3>::zeros([1, 3, 4], &device);
    let run = |cfg: &SamplerConfig, frames| {
        sample_diffusion(&dynamics, context.clone(), actions.clone(), frames, cfg)
    };
    let err =
        run(&SamplerConfig { denoise_steps: Some(8), ..Default::default() }, 4).unwrap_err().to_string();
    assert!(err.contains("K = 4") && err.contains("asked for 8"), "{err}");
    assert!(run(&SamplerConfig { denoise_steps: Some(4), ..Default::default() }, 4).is_ok());
    let err = run(&SamplerConfig { context_noise: 1.5, ..Default::default() }, 4).unwrap_err().to_string();
    assert!(err.contains("context_noise"), "{err}");
    assert!(run(&SamplerConfig::default(), 1).unwrap_err().to_string().contains("frames"));
    assert!(run(&SamplerConfig::default(), 5).unwrap_err().to_string().contains("actions"));
    let wide = Tensor::<4>::zeros([1, 1, 3, 7], &device);
    assert!(sample_diffusion(&dynamics, wide, actions.clone(), 4, &SamplerConfig::default()).is_err());
}
