use super::*;
use crate::data::DataConfig;
use crate::diffusion::genie::assemble_diffusion_genie;
use crate::diffusion::genie::tests::mae_run;
use crate::diffusion::tests::tiny_diffusion;
use crate::genie::tests::bits;
use crate::genie::ActionSource;
use crate::tokenizer::task::tests::tiny_dataset;
use burn::tensor::Device;
use jinn_train::config::TrainConfig;
use jinn_train::train_loop::run;

fn run_cfg(model: crate::genie::GenieConfig) -> GenieRunConfig {
    let train = TrainConfig {
        steps: 4,
        batch_size: 2,
        seed: 4,
        lr: jinn_train::schedule::LrSchedule {
            kind: jinn_train::schedule::ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 3e-3,
            decay_end: 0.0,
            warmup_steps: 1,
            decay_steps: 1,
        },
        log_every: 1,
        val_every: 2,
        val_batches: 1,
        image_every: 4,
        ckpt_every: 2,
        ..TrainConfig::default()
    };
    GenieRunConfig { model, train, data: DataConfig { seq_len: 3, loader_threads: 1, prefetch: 2 } }
}

use crate::data::test_support::run_options as opts;

#[test]
fn resumed_run_is_bit_identical_and_a_k_mismatch_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    tiny_dataset(&data);
    let mae = mae_run(root.path());
    let device = Device::flex().autodiff();
    let source = ActionSource::CoTrain(crate::lam::tests::tiny());
    let (init, genie_cfg) = assemble_diffusion_genie(&mae, source, &tiny_diffusion(4), &device).unwrap();
    let cfg = run_cfg(genie_cfg);
    let init_bits = bits(&init);

    let full_dir = root.path().join("full");
    let mut full = DiffusionTask::new(&cfg, &data, init.clone()).unwrap();
    run(&mut full, &cfg.train, &opts(&full_dir, false, None, &cfg)).unwrap();
    let split_dir = root.path().join("split");
    let mut first = DiffusionTask::new(&cfg, &data, init.clone()).unwrap();
    run(&mut first, &cfg.train, &opts(&split_dir, false, Some(2), &cfg)).unwrap();
    drop(first);
    let mut second = DiffusionTask::new(&cfg, &data, init.clone()).unwrap();
    let summary = run(&mut second, &cfg.train, &opts(&split_dir, true, None, &cfg)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (2, 4));
    assert_ne!(bits(full.model()), init_bits, "training moved the weights");
    assert_eq!(bits(second.model()), bits(full.model()));

    let records =
        jinn_train::metrics_log::read_metrics(&full_dir.join(jinn_train::metrics_log::METRICS_FILE)).unwrap();
    let train = records.iter().find(|r| r.split == "train").unwrap();
    let val = records.iter().find(|r| r.split == "val").unwrap();
    for key in ["loss", "mse", "codebook_usage_lam"] {
        assert!(train.metrics.get(key).is_some_and(|v| v.is_finite()), "train {key}: {:?}", train.metrics);
    }
    for key in ["loss", "mse", "psnr", "ssim"] {
        assert!(val.metrics.get(key).is_some_and(|v| v.is_finite()), "val {key}: {:?}", val.metrics);
    }
    assert!(full_dir.join("images/dynamics_step_000004.gif").is_file());

    // Resuming with another number of noise levels K fails on the stored key.
    let mut other = cfg.clone();
    other.model.dynamics = crate::diffusion::tests::tiny_diffusion(8);
    let fresh = other.model.init_diffusion(&device).unwrap();
    let mut task = DiffusionTask::new(&other, &data, fresh).unwrap();
    let err = run(&mut task, &other.train, &opts(&full_dir, true, None, &other)).unwrap_err().to_string();
    assert!(err.contains("model.dynamics.denoise_steps") && err.contains('4') && err.contains('8'), "{err}");
}

#[test]
fn demo_config_parses_and_builds_diffusion_dynamics() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo/dynamics-diffusion.toml");
    let cfg: crate::DynamicsRunConfig = jinn_train::config::load(Some(&path), &[]).unwrap();
    assert_eq!(cfg.model.diffusion().map(|d| d.denoise_steps), Some(64));
    cfg.train.validate().unwrap();
    let model = cfg.model.init_diffusion(8, cfg.lam.coder.latent_dim, &Device::flex()).unwrap();
    assert_eq!((model.levels(), model.latent_dim(), model.action_dim()), (64, 8, 32));
}
