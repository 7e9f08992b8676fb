use super::*;
use crate::dynamics::DynamicsKind;
use crate::genie::tests::{tiny_dynamics, tiny_tokenizer};
use crate::genie::Genie;
use crate::genie::{ActionConfig, GenieConfig};
use crate::sample::sample;
use burn::tensor::Device;

const S: usize = 3; // 1 context + 2 generated frames

fn genie(actions: ActionConfig) -> Genie {
    let device = Device::flex();
    device.seed(11);
    let cfg =
        GenieConfig { tokenizer: tiny_tokenizer(), actions, dynamics: tiny_dynamics(DynamicsKind::MASKGIT) };
    cfg.init(&device).unwrap()
}

fn lam_genie() -> Genie {
    genie(ActionConfig::Lam { lam: crate::lam::tests::tiny(), co_train: false })
}

/// `b` clips of `S` 16×16 frames (a moving square) with recorded actions `b·S`.
fn batch(b: usize, actions: Option<Vec<i64>>) -> Batch {
    Batch {
        videos: crate::lam::tests::moving_square(b, S),
        action_dims: if actions.is_some() { 1 } else { 0 },
        actions,
        batch_size: b,
        seq_len: S,
        frame_shape: FrameShape::rgb(16, 16),
        step: 0,
        origins: Vec::new(),
    }
}

/// The `i`-th clip of `batch` alone.
fn clip(batch: &Batch, i: usize) -> Batch {
    let fb = batch.frame_shape.frame_bytes() * S;
    Batch {
        videos: batch.videos[i * fb..(i + 1) * fb].to_vec(),
        actions: batch.actions.as_ref().map(|a| a[i * S..(i + 1) * S].to_vec()),
        batch_size: 1,
        ..batch.clone()
    }
}

fn config() -> WorldEvalConfig {
    WorldEvalConfig {
        context: 1,
        frames: S - 1,
        sampler: SamplerConfig { maskgit_steps: 3, argmax: true, ..SamplerConfig::default() },
        game: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * a.abs().max(1.0)
}

/// The LAM model, a two-clip batch with recorded actions and an evaluation of both clips.
fn evaluated_two_clips() -> (Genie, Batch, WorldEval) {
    let genie = lam_genie();
    let both = batch(2, Some(vec![0, 1, 2, 1, 1, 0]));
    let mut eval = WorldEval::new(config()).unwrap();
    eval.add_batch(&genie, &both, 2).unwrap();
    (genie, both, eval)
}

#[test]
fn metrics_are_consistent_and_per_clip() {
    let (genie, both, eval) = evaluated_two_clips();
    let m = eval.finish().unwrap();
    assert_eq!((m.clips, m.rollout_psnr_per_frame.len(), m.nmi_transitions), (2, 2, 4));
    // The first generated frame comes from the true context either way: same sample.
    assert!(close(m.next_frame_psnr_per_frame[0], m.rollout_psnr_per_frame[0]), "{m:?}");
    for (d, (r, x)) in m.delta_psnr_per_frame.iter().zip(m.rollout_psnr_per_frame.iter().zip([0, 1])) {
        let random = eval.random_psnr[x] / 2.0;
        assert!(close(*d, r - random), "{d} vs {r} − {random}");
    }
    let counts = m.code_action_counts.clone().unwrap();
    assert_eq!(counts.iter().flatten().sum::<usize>(), m.nmi_transitions, "{counts:?}");
    let nmi = m.nmi.unwrap();
    assert!((0.0..=1.0).contains(&nmi) && (0.0..=1.0).contains(&m.nmi_arithmetic.unwrap()), "{m:?}");
    for v in [m.next_frame_psnr, m.next_frame_ssim, m.rollout_psnr, m.rollout_ssim, m.random_action_psnr] {
        assert!(v.is_finite(), "{m:?}");
    }

    // Argmax sampling: the batch's means are the means of its clips evaluated alone.
    let mut alone = [0.0f64; 2];
    for i in 0..2 {
        let mut e = WorldEval::new(config()).unwrap();
        e.add_batch(&genie, &clip(&both, i), 1).unwrap();
        let mi = e.finish().unwrap();
        alone[0] += mi.rollout_psnr / 2.0;
        alone[1] += mi.next_frame_ssim / 2.0;
    }
    assert!((alone[0] - m.rollout_psnr).abs() < 1e-6, "{alone:?} vs {m:?}");
    assert!((alone[1] - m.next_frame_ssim).abs() < 1e-6, "{alone:?} vs {m:?}");
}

#[test]
fn only_the_first_clips_count_and_actionless_data_has_no_nmi() {
    let genie = lam_genie();
    let mut eval = WorldEval::new(config()).unwrap();
    eval.add_batch(&genie, &batch(2, None), 1).unwrap();
    let m = eval.finish().unwrap();
    assert_eq!((m.clips, m.nmi, m.nmi_transitions, m.code_action_counts), (1, None, 0, None));
}

#[test]
fn random_actions_keep_the_context_and_draw_table_rows() {
    let genie = lam_genie();
    let device = Device::flex();
    let (b, s, la) = (2, 5, 8);
    let actions = Tensor::<3>::ones([b, s - 1, la], &device) * 100.0; // not a table row
    let random = random_actions(&genie, actions, 3, 0, 0); // context 3: rows 0, 1 kept
    let random: Vec<f32> = random.try_into_vec_as::<f32>().unwrap();
    let table: Vec<f32> = genie.action_table().try_into_vec_as::<f32>().unwrap(); // [k, la]
    for bi in 0..b {
        for row in 0..s - 1 {
            let got = &random[(bi * (s - 1) + row) * la..(bi * (s - 1) + row + 1) * la];
            if row < 2 {
                assert!(got.iter().all(|&v| v == 100.0), "context transition {row} changed");
            } else {
                assert!(table.chunks(la).any(|code| code == got), "row {row} is no table entry");
            }
        }
    }
}

/// The random actions reach the sampler: its logits change (the untrained model's argmax
/// tokens, and so the PSNR, may not).
#[test]
fn random_actions_change_the_sampled_logits() {
    let genie = lam_genie();
    let device = Device::flex();
    let b = batch(2, None);
    let videos = frames_to_unit(&b.videos, [2, S, 16, 16, 3], &device);
    let tokens = genie.tokenizer.encode(videos.clone()).unwrap();
    let (actions, _) = genie.latent_actions(videos, None).unwrap();
    let context = tokens.slice([0..2, 0..1, 0..4 * 4]);
    let cfg = config().sampler;
    let inferred = sample(&genie.dynamics, context.clone(), actions.clone(), S, &cfg).unwrap();
    let random = random_actions(&genie, actions, 1, 5, 0);
    let random = sample(&genie.dynamics, context, random, S, &cfg).unwrap();
    let worst = inferred.logits.iter().zip(&random.logits).map(|(a, r)| (a - r).abs()).fold(0.0, f32::max);
    assert!(worst > 1e-4, "logits moved by only {worst}");
}

#[test]
fn bad_inputs_are_clear_errors() {
    assert!(WorldEval::new(WorldEvalConfig { context: 0, ..config() }).is_err());
    let mut eval = WorldEval::new(WorldEvalConfig { frames: 5, ..config() }).unwrap();
    let err = eval.add_batch(&lam_genie(), &batch(1, None), 1).unwrap_err().to_string();
    assert!(err.contains("context + frames"), "{err}");
    let err = WorldEval::new(config()).unwrap().finish().unwrap_err().to_string();
    assert!(err.contains("no clips"), "{err}");
    // A recorded-action model on data without actions.
    let gt = genie(ActionConfig::Gt { num_actions: 3, action_dim: 4 });
    let err = WorldEval::new(config()).unwrap().add_batch(&gt, &batch(1, None), 1).unwrap_err().to_string();
    assert!(err.contains("actions"), "{err}");
}

/// The diffusion world model goes through the same evaluation: finite metrics, and the first
/// generated frame of the rollout equals the teacher-forced one (same context, same seed).
#[test]
fn diffusion_models_are_evaluated_like_token_models() {
    let device = Device::flex();
    device.seed(12);
    let cfg = GenieConfig {
        tokenizer: crate::diffusion::genie::tests::tiny_mae_tokenizer(),
        actions: ActionConfig::Lam { lam: crate::lam::tests::tiny(), co_train: false },
        dynamics: crate::diffusion::tests::tiny_diffusion(3),
    };
    let model = cfg.init_diffusion(&device).unwrap();
    let both = batch(2, Some(vec![0, 1, 2, 1, 1, 0]));
    let mut eval = WorldEval::new(config()).unwrap();
    eval.add_batch(&model, &both, 2).unwrap();
    let m = eval.finish().unwrap();
    assert_eq!((m.clips, m.rollout_psnr_per_frame.len(), m.nmi_transitions), (2, 2, 4));
    assert!(close(m.next_frame_psnr_per_frame[0], m.rollout_psnr_per_frame[0]), "{m:?}");
    for v in [m.rollout_psnr, m.rollout_ssim, m.next_frame_psnr, m.random_action_psnr, m.delta_psnr] {
        assert!(v.is_finite(), "{m:?}");
    }
    // Asking the diffusion sampler for another K than the model's is an error.
    let wrong = WorldEvalConfig {
        sampler: SamplerConfig { denoise_steps: Some(5), ..SamplerConfig::default() },
        ..config()
    };
    let err = WorldEval::new(wrong).unwrap().add_batch(&model, &both, 1).unwrap_err().to_string();
    assert!(err.contains("K = 3"), "{err}");
}

/// Clips added with `add_lam_codes` count towards the NMI exactly as evaluated clips do, but
/// not towards the clip count; data without recorded actions adds no pairs.
#[test]
fn lam_only_clips_add_the_same_code_action_pairs() {
    let (genie, both, full) = evaluated_two_clips();
    let mut mixed = WorldEval::new(config()).unwrap();
    mixed.add_batch(&genie, &both, 1).unwrap();
    mixed.add_lam_codes(&genie, &clip(&both, 1), 1).unwrap();
    mixed.add_lam_codes(&genie, &batch(2, None), 2).unwrap();
    assert_eq!((mixed.clips(), mixed.lam_transitions()), (1, 4));
    assert_eq!(
        (mixed.lam_codes.clone(), mixed.true_actions.clone()),
        (full.lam_codes.clone(), full.true_actions.clone())
    );
    let (f, m) = (full.finish().unwrap(), mixed.finish().unwrap());
    assert_eq!((f.nmi, f.code_action_counts), (m.nmi, m.code_action_counts));
}

#[test]
fn copy_last_frame_baseline_is_the_naive_psnr_of_the_repeated_frame() {
    let (_, both, eval) = evaluated_two_clips();
    let m = eval.finish().unwrap();
    let fb = both.frame_shape.frame_bytes();
    let (c, s) = (config().context, S);
    let mut sum = 0.0;
    for bi in 0..2 {
        let last = &both.videos[(bi * s + c - 1) * fb..(bi * s + c) * fb];
        for t in c..s {
            let frame = &both.videos[(bi * s + t) * fb..(bi * s + t + 1) * fb];
            let mse =
                frame.iter().zip(last).map(|(&x, &y)| ((x as f64 - y as f64) / 255.0).powi(2)).sum::<f64>()
                    / fb as f64;
            let cap = 10.0 * (255.0f64 * 255.0 * fb as f64).log10();
            sum += if mse == 0.0 { cap } else { -10.0 * mse.log10() };
        }
    }
    let naive = sum / (2 * (s - c)) as f64;
    assert!((naive - m.copy_last_frame_psnr).abs() < 1e-9, "{naive} vs {}", m.copy_last_frame_psnr);
    assert!(m.copy_last_frame_ssim.is_finite() && m.copy_last_frame_ssim <= 1.0, "{m:?}");
    // A frame one unit off in one value scores the cap that identical frames take.
    let shape = both.frame_shape;
    let a = vec![7u8; fb];
    let mut b = a.clone();
    b[3] += 1;
    let one_off = jinn_data::metrics::psnr(&a, &b, shape).unwrap();
    assert!((one_off - finite_psnr_cap(shape)).abs() < 1e-9, "{one_off}");
}
