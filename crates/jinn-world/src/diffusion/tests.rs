use super::*;
use crate::dynamics_kinds::{DynamicsKind, KindConfig};
use burn::optim::GradientsParams;
use jinn_data::rng::SampleStreams;
use jinn_train::optim::OptimConfig;

pub(crate) fn tiny_diffusion(levels: usize) -> DynamicsConfig {
    DynamicsConfig {
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        num_blocks: 2,
        action_dim: 4,
        per_kind: KindConfig::new(DynamicsKind::DIFFUSION, DiffusionConfig { denoise_steps: levels }),
        ..DynamicsConfig::default()
    }
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

#[test]
fn levels_and_weights_match_the_schedule() {
    // K = 4: τ ∈ {0, 1/4, 1/2, 3/4}, weights 0.9τ + 0.1 written out by hand.
    let taus: Vec<f64> = (0..4).map(|k| signal_level(k, 4)).collect();
    assert_eq!(taus, vec![0.0, 0.25, 0.5, 0.75]);
    let weights: Vec<f64> = taus.iter().map(|&t| loss_weight(t)).collect();
    for (w, want) in weights.iter().zip([0.1, 0.325, 0.55, 0.775]) {
        assert!((w - want).abs() < 1e-12, "{w} vs {want}");
    }
    // Draws: every level of 0..K equally often, never K; the noise is standard normal.
    let c = draw_corruption([40, 50, 4, 8], 5, &SampleStreams::new(3, "test", 0, 40)).unwrap();
    let mut counts = [0usize; 5];
    for &k in &c.levels {
        counts[usize::try_from(k).unwrap()] += 1; // panics on an out-of-range level
    }
    for count in counts {
        assert!((count as f64 / 2000.0 - 0.2).abs() < 0.03, "{counts:?}");
    }
    let n = c.noise.len() as f64;
    let mean = c.noise.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = c.noise.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    assert!(mean.abs() < 0.02 && (var - 1.0).abs() < 0.03, "noise mean {mean}, variance {var}");
    let tails = c.noise.iter().filter(|v| v.abs() > 1.96).count() as f64 / n;
    assert!((tails - 0.05).abs() < 0.01, "two-sided 5% tail mass {tails}");
}

#[test]
fn corruption_and_weighted_loss_match_a_loop_reference() {
    let device = Device::flex();
    let (b, t, n, l) = (2, 3, 4, 5);
    let x = Tensor::<4>::random([b, t, n, l], Distribution::Uniform(-1.0, 1.0), &device);
    let pred = Tensor::<4>::random([b, t, n, l], Distribution::Uniform(-1.0, 1.0), &device);
    let noise = Tensor::<4>::random([b, t, n, l], Distribution::Normal(0.0, 1.0), &device);
    let taus = [0.0f32, 0.25, 0.5, 0.75, 0.125, 0.875];
    let tau = Tensor::<2>::from_data(TensorData::new(taus.to_vec(), [b, t]), &device);
    let noisy = floats(corrupt(x.clone(), tau.clone(), noise.clone()));
    let (loss, mse) = diffusion_loss(pred.clone(), x.clone(), tau);
    let (xv, pv, ev) = (floats(x), floats(pred), floats(noise));
    let (mut want_loss, mut want_mse) = (0.0f64, 0.0f64);
    for (frame, &tau) in taus.iter().enumerate() {
        let tau = tau as f64;
        let mut sq = 0.0f64;
        for i in frame * n * l..(frame + 1) * n * l {
            let want = (1.0 - tau) * ev[i] as f64 + tau * xv[i] as f64;
            assert!((noisy[i] as f64 - want).abs() < 1e-6, "x_noisy[{i}]");
            sq += (pv[i] as f64 - xv[i] as f64).powi(2);
        }
        let mse_bt = sq / (n * l) as f64;
        want_loss += (0.9 * tau + 0.1) * mse_bt;
        want_mse += mse_bt;
    }
    let frames = (b * t) as f64;
    assert!((loss.into_scalar::<f32>() as f64 - want_loss / frames).abs() < 1e-6);
    assert!((mse.into_scalar::<f32>() as f64 - want_mse / frames).abs() < 1e-6);
}

#[test]
fn shapes_causality_parameter_count_and_config_errors() {
    let device = Device::flex();
    let model = tiny_diffusion(8).init_diffusion(6, 4, &device).unwrap();
    assert_eq!((model.levels(), model.latent_dim(), model.action_dim()), (8, 6, 4));
    let (b, t, n, l) = (2, 3, 5, 6);
    let x = Tensor::<4>::random([b, t, n, l], Distribution::Normal(0.0, 1.0), &device);
    let acts = Tensor::<3>::random([b, t - 1, 4], Distribution::Normal(0.0, 1.0), &device);
    let levels = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 3, 7, 1, 2, 5], [b, t]), &device);
    let pred = model.predict(x.clone(), levels.clone(), acts.clone()).unwrap();
    assert_eq!(pred.dims(), [b, t, n, l]);
    // Temporal causality: changing the last frame leaves frames 0..t−2 unchanged.
    let changed = Tensor::cat(
        vec![
            x.clone().slice([0..b, 0..t - 1]),
            Tensor::random([b, 1, n, l], Distribution::Normal(0.0, 1.0), &device),
        ],
        1,
    );
    let again = model.predict(changed, levels.clone(), acts.clone()).unwrap();
    let (p, q) = (floats(pred.slice([0..b, 0..t - 1])), floats(again.slice([0..b, 0..t - 1])));
    assert!(p.iter().zip(&q).all(|(a, b)| (a - b).abs() < 1e-5));
    // Bad shapes are errors.
    assert!(model.predict(x.clone(), levels.clone().slice([0..b, 0..2]), acts.clone()).is_err());
    assert!(model.predict(x.clone(), levels, acts.slice([0..b, 0..1])).is_err());
    let c = Corruption { levels: vec![0; 5], noise: vec![0.0; b * t * n * l] };
    assert!(model.forward_train(x, Tensor::zeros([b, t - 1, 4], &device), &c).is_err());

    // Jasmine's DynamicsDiffusion (6 blocks, K = 64, L = La = 32): 25,261,696.
    let jasmine = DynamicsConfig::default_for(DynamicsKind::DIFFUSION);
    assert_eq!(jasmine.init_diffusion(32, 32, &device).unwrap().num_params(), 25_261_696);
    // Config errors name the field.
    for (cfg, field) in [
        (tiny_diffusion(0), "denoise_steps"),
        (
            DynamicsConfig { per_kind: KindConfig::default_for(DynamicsKind::MASKGIT), ..tiny_diffusion(8) },
            "kind",
        ),
    ] {
        assert!(cfg.init_diffusion(6, 4, &device).unwrap_err().to_string().contains(field), "{field}");
    }
    assert!(tiny_diffusion(8)
        .init(16, 4, &device)
        .unwrap_err()
        .to_string()
        .contains("do not predict tokenizer codes"));
}

#[test]
fn loss_falls_on_a_small_batch() {
    let device = Device::flex().autodiff();
    device.seed(5);
    let mut model = tiny_diffusion(4).init_diffusion(6, 4, &device).unwrap();
    let mut optim = OptimConfig::default().init().unwrap();
    let (b, t, n, l) = (2, 3, 4, 6);
    // Latents that move predictably from frame to frame.
    let xs: Vec<f32> = (0..b * t * n * l).map(|i| ((i % 7) as f32 / 3.5 - 1.0) * 0.8).collect();
    let x = Tensor::<4>::from_data(TensorData::new(xs, [b, t, n, l]), &device);
    let acts = Tensor::<3>::zeros([b, t - 1, 4], &device);
    let eval_corruption = draw_corruption([b, t, n, l], 4, &SampleStreams::new(0, "eval", 0, b)).unwrap();
    let eval = |m: &DiffusionDynamics| {
        m.forward_train(x.clone(), acts.clone(), &eval_corruption).unwrap().loss.into_scalar::<f32>()
    };
    let first = eval(&model);
    for step in 0..80 {
        let c = draw_corruption([b, t, n, l], 4, &SampleStreams::new(0, "t", step, b)).unwrap();
        let out = model.forward_train(x.clone(), acts.clone(), &c).unwrap();
        let grads = GradientsParams::from_grads(out.loss.backward(), &model);
        model = optim.step(3e-3, model, grads);
    }
    let last = eval(&model);
    eprintln!("diffusion: loss {first} → {last}");
    assert!(last * 3.0 <= first, "loss {first} → {last}: less than a 3× drop");
}

/// A clip's levels and noise depend on its own stream only.
#[test]
fn a_clips_corruption_is_keyed_by_its_global_index() {
    let [b, t, n, l] = [4, 3, 2, 5];
    let whole = draw_corruption([b, t, n, l], 6, &SampleStreams::new(1, "noise", 6, b)).unwrap();
    let half = draw_corruption([2, t, n, l], 6, &SampleStreams::new(1, "noise", 8, 2)).unwrap();
    assert_eq!(half.levels, whole.levels[2 * t..]);
    assert_eq!(half.noise, whole.noise[2 * t * n * l..]);
}
