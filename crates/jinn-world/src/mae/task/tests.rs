use super::*;
use crate::data::DataConfig;
use crate::genie::tests::bits;
use crate::mae::MaeConfig;
use crate::tokenizer::task::tests::tiny_dataset;
use crate::tokenizer::{TokenizerConfig, TokenizerKind, VqConfig};
use jinn_train::config::TrainConfig;
use jinn_train::schedule::{LrSchedule, ScheduleKind};
use jinn_train::train_loop::run;

pub(crate) fn tiny_mae_run() -> TokenizerRunConfig {
    let coder = crate::tokenizer::tests::tiny_coder();
    let model = TokenizerConfig::Mae(MaeConfig { coder, ..crate::mae::tests::tiny_mae() });
    let train = TrainConfig {
        steps: 4,
        batch_size: 4,
        grad_accum: 2,
        seed: 9,
        lr: LrSchedule {
            kind: ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 1e-2,
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
    TokenizerRunConfig { model, train, data: DataConfig { seq_len: 2, loader_threads: 1, prefetch: 2 } }
}

use crate::data::test_support::run_options as opts;

#[test]
fn resumed_run_is_bit_identical_and_logs_metrics() {
    let cfg = tiny_mae_run();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    tiny_dataset(&data);
    let device = Device::flex().autodiff();
    let init = cfg.model.mae().unwrap().init(&device).unwrap();
    let init_bits = bits(&init);

    let full_dir = root.path().join("full");
    let mut full = MaeTask::new(&cfg, &data, init.clone(), device.clone()).unwrap();
    run(&mut full, &cfg.train, &opts(&full_dir, false, None, &cfg)).unwrap();

    let split_dir = root.path().join("split");
    let mut first = MaeTask::new(&cfg, &data, init.clone(), device.clone()).unwrap();
    run(&mut first, &cfg.train, &opts(&split_dir, false, Some(2), &cfg)).unwrap();
    drop(first);
    let other = cfg.model.mae().unwrap().init(&device).unwrap();
    let mut second = MaeTask::new(&cfg, &data, other, device.clone()).unwrap();
    let summary = run(&mut second, &cfg.train, &opts(&split_dir, true, None, &cfg)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (2, 4));
    assert_ne!(bits(full.model()), init_bits, "training moved the weights");
    assert_eq!(bits(second.model()), bits(full.model()));

    let records =
        jinn_train::metrics_log::read_metrics(&full_dir.join(jinn_train::metrics_log::METRICS_FILE)).unwrap();
    for split in ["train", "val"] {
        let r = records.iter().find(|r| r.split == split).expect("a record");
        for key in ["loss", "mse", "psnr", "ssim"] {
            assert!(r.metrics.get(key).is_some_and(|v| v.is_finite()), "{split} {key}: {:?}", r.metrics);
        }
    }
    assert!(full_dir.join("images/recon_step_000004.gif").is_file());

    // Resuming the MAE run as a VQ tokenizer fails on the stored kind.
    let vq = TokenizerRunConfig {
        model: TokenizerConfig::Vq(VqConfig { coder: cfg.model.coder().clone(), ..VqConfig::default() }),
        ..cfg.clone()
    };
    let mut vq_task = crate::TokenizerTask::from_config(&vq, &data, device.clone()).unwrap();
    let err = run(&mut vq_task, &vq.train, &opts(&full_dir, true, None, &vq)).unwrap_err().to_string();
    assert!(err.contains("model.kind") && err.contains("mae") && err.contains("vq"), "{err}");
    // A VQ config given to the MAE task is refused up front.
    let err = MaeTask::from_config(&vq, &data, device).err().unwrap().to_string();
    assert!(err.contains("`vq` tokenizer config"), "{err}");
}

#[test]
fn demo_config_parses_and_builds_an_mae_tokenizer() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo/tokenizer-mae.toml");
    let cfg: TokenizerRunConfig = jinn_train::config::load(Some(&path), &[]).unwrap();
    assert_eq!(cfg.model.kind(), TokenizerKind::Mae);
    cfg.train.validate().unwrap();
    let model = cfg.model.mae().unwrap().init(&Device::flex()).unwrap();
    assert_eq!((model.grid().num_patches(), model.latent_dim()), (64, 8));
    // Same encoder/decoder shapes as the demo VQ tokenizer.
    let vq_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo/tokenizer.toml");
    let vq: TokenizerRunConfig = jinn_train::config::load(Some(&vq_path), &[]).unwrap();
    let shape = |m: &TokenizerConfig| {
        let m = m.coder();
        (
            m.height,
            m.width,
            m.patch,
            m.model_dim,
            m.ffn_dim,
            m.num_heads,
            m.encoder_blocks,
            m.decoder_blocks,
            m.latent_dim,
        )
    };
    assert_eq!(shape(&cfg.model), shape(&vq.model));
}
