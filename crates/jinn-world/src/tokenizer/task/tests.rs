use super::*;
use crate::precision_check::{bf16_step_matches_f32, float_params};
use crate::tokenizer::tests::tiny_coder;
use crate::tokenizer::VqConfig;
use burn::module::{ModuleVisitor, Param};
use burn::tensor::Tensor;
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::FrameShape;
use jinn_train::precision::Precision;
use jinn_train::schedule::{LrSchedule, ScheduleKind};
use jinn_train::train_loop::run;

/// Four short 16×16 breakout episodes: three train, one val.
pub(crate) fn tiny_dataset(dir: &Path) {
    let cfg = GenerateConfig {
        episodes: 4,
        val_fraction: 0.25,
        test_fraction: 0.0,
        frame_shape: FrameShape::rgb(16, 16),
        min_episode_len: 12,
        max_episode_len: 12,
        chunk_len: 12,
        threads: 1,
        ..Default::default()
    };
    generate_dataset(&cfg, dir, &mut |_| {}).unwrap();
}

fn run_cfg() -> TokenizerRunConfig {
    let model = TokenizerConfig::Vq(VqConfig {
        coder: tiny_coder(),
        num_codes: 32,
        codebook_dropout: 0.1,
        vq_beta: 0.25,
        reset_threshold: 2,
        remat: false,
    });
    let data = DataConfig { seq_len: 4, loader_threads: 1, prefetch: 2 };
    let train = TrainConfig {
        steps: 6,
        batch_size: 4,
        grad_accum: 2,
        seed: 5,
        lr: LrSchedule {
            kind: ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 1e-2,
            decay_end: 0.0,
            warmup_steps: 2,
            decay_steps: 2,
        },
        clip_norm: Some(1.0),
        log_every: 1,
        val_every: 2,
        val_batches: 1,
        image_every: 3,
        ckpt_every: 2,
        keep_last: 2,
        keep_every: 0,
        ..TrainConfig::default()
    };
    TokenizerRunConfig { model, train, data }
}

fn bits(model: &Tokenizer) -> Vec<u32> {
    struct Bits(Vec<u32>);
    impl ModuleVisitor for Bits {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            self.0.extend(p.val().try_into_vec_as::<f32>().unwrap().into_iter().map(f32::to_bits));
        }
    }
    let mut b = Bits(Vec::new());
    model.visit(&mut b);
    b.0
}

use crate::data::test_support::run_options as opts;

#[test]
fn resumed_run_is_bit_identical_to_uninterrupted_run() {
    resume_is_bit_identical(run_cfg());
}

#[test]
fn resume_is_bit_identical_with_per_block_recomputation() {
    let mut cfg = run_cfg();
    vq_mut(&mut cfg).remat = true;
    resume_is_bit_identical(cfg);
}

/// The VQ section of a VQ run config, to change.
fn vq_mut(cfg: &mut TokenizerRunConfig) -> &mut VqConfig {
    match &mut cfg.model {
        TokenizerConfig::Vq(m) => m,
        TokenizerConfig::Mae(_) => panic!("a VQ run config"),
    }
}

fn resume_is_bit_identical(cfg: TokenizerRunConfig) {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let device = Device::flex().autodiff();
    let init = cfg.model.vq().unwrap().init(&device).unwrap();
    let init_bits = bits(&init); // materialises the lazy parameters before cloning
    assert_eq!(bits(&init.clone()), init_bits);

    let full_dir = tempfile::tempdir().unwrap();
    let mut full = TokenizerTask::new(&cfg, data.path(), init.clone(), device.clone()).unwrap();
    run(&mut full, &cfg.train, &opts(full_dir.path(), false, None, &cfg)).unwrap();

    let split_dir = tempfile::tempdir().unwrap();
    let mut first = TokenizerTask::new(&cfg, data.path(), init.clone(), device.clone()).unwrap();
    run(&mut first, &cfg.train, &opts(split_dir.path(), false, Some(3), &cfg)).unwrap();
    drop(first);
    // A fresh process: another initialisation, everything else from the step-3 checkpoint.
    let other = cfg.model.vq().unwrap().init(&device).unwrap();
    let mut second = TokenizerTask::new(&cfg, data.path(), other, device.clone()).unwrap();
    let summary = run(&mut second, &cfg.train, &opts(split_dir.path(), true, None, &cfg)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (3, 6));

    let full_bits = bits(full.model());
    assert_ne!(full_bits, init_bits, "training moved the weights");
    assert_eq!(bits(second.model()), full_bits);
    // The dead-code counters came back from the step-3 checkpoint.
    assert_eq!(second.tracker(), full.tracker());

    let records =
        jinn_train::metrics_log::read_metrics(&full_dir.path().join(jinn_train::metrics_log::METRICS_FILE))
            .unwrap();
    let val = records.iter().find(|r| r.split == "val").expect("a validation record");
    for key in ["loss", "mse", "q_loss", "commitment_loss", "psnr", "ssim", "codebook_usage"] {
        assert!(val.metrics.get(key).is_some_and(|v| v.is_finite()), "val {key}: {:?}", val.metrics);
        // log_every = 1: every training record is a logged step and carries the image metrics.
        for r in records.iter().filter(|r| r.split == "train") {
            assert!(r.metrics.get(key).is_some_and(|v| v.is_finite()), "train {key}: {:?}", r.metrics);
        }
    }
    assert!(full_dir.path().join("images/recon_step_000003.gif").is_file());
    let resets: f64 = records.iter().filter_map(|r| r.metrics.get("codes_reset")).sum();
    assert!(resets > 0.0, "no dead code was reset");
}

#[test]
fn frame_shape_mismatch_names_the_fields() {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let mut cfg = run_cfg();
    vq_mut(&mut cfg).coder.height = 32;
    let err =
        TokenizerTask::from_config(&cfg, data.path(), Device::flex().autodiff()).err().unwrap().to_string();
    assert!(err.contains("model.height") && err.contains("32×16×3") && err.contains("16×16×3"), "{err}");
}

#[test]
fn demo_config_parses_validates_and_builds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo/tokenizer.toml");
    let cfg: TokenizerRunConfig = jinn_train::config::load(Some(&path), &[]).unwrap();
    let c = cfg.model.coder();
    assert_eq!((c.height, c.width, c.channels), (64, 64, 3));
    cfg.train.validate().unwrap();
    let model = cfg.model.vq().unwrap().init(&Device::flex()).unwrap();
    assert_eq!(model.grid().num_patches(), 64);
}

fn load_config(set: &str) -> TokenizerRunConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../configs/{set}/tokenizer.toml"));
    let cfg: TokenizerRunConfig = jinn_train::config::load(Some(&path), &[]).unwrap();
    cfg.train.validate().unwrap();
    cfg
}

#[test]
fn jasmine_small_config_is_the_benchmark_config() {
    let cfg = load_config("jasmine-small");
    let m = cfg.model.vq().unwrap();
    let c = &m.coder;
    assert_eq!((c.height, c.width, c.channels, c.patch), (64, 64, 3, 16));
    assert_eq!((c.model_dim, c.ffn_dim, c.num_heads), (128, 512, 4));
    assert_eq!((c.encoder_blocks, c.decoder_blocks, c.latent_dim, m.num_codes), (2, 2, 32, 1024));
    assert_eq!((cfg.data.seq_len, cfg.train.batch_size, cfg.train.grad_accum), (16, 8, 1));
    // Parameters are lazy: building and counting draws nothing.
    assert_eq!(m.init(&Device::flex()).unwrap().num_params(), 1_299_040);
}

#[test]
fn jasmine_default_config_equals_the_built_in_defaults() {
    let cfg = load_config("jasmine-default");
    assert_eq!(cfg, TokenizerRunConfig::default(), "the file must spell out Jasmine's defaults");
    assert_eq!(cfg.model.vq().unwrap().init(&Device::flex()).unwrap().num_params(), 34_489_696);
}

/// [`run_cfg`] in `precision`, one update a step, no dropout or resets; patch 6 pads the 16×16
/// frames to 18×18, so the padding path runs in bf16 too.
fn precision_cfg(precision: Precision) -> TokenizerRunConfig {
    let mut cfg = run_cfg();
    let vq = vq_mut(&mut cfg);
    (vq.coder.patch, vq.codebook_dropout, vq.reset_threshold) = (6, 0.0, 0);
    (cfg.data.seq_len, cfg.train.batch_size, cfg.train.grad_accum) = (3, 2, 1);
    (cfg.train.steps, cfg.train.val_every, cfg.train.image_every) = (2, 0, 0);
    (cfg.train.lr.warmup_steps, cfg.train.lr.decay_steps) = (1, 1);
    cfg.train.precision = precision;
    cfg
}

#[test]
fn bf16_step_updates_f32_master_weights_with_a_loss_close_to_f32() {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let device = Device::flex().autodiff();
    let init =
        jinn_nn::init::seeded_init(&device, 7, || precision_cfg(Precision::F32).model.vq()?.init(&device))
            .unwrap();
    let [f32_task, bf16_task] = [Precision::F32, Precision::Bf16]
        .map(|p| TokenizerTask::new(&precision_cfg(p), data.path(), init.clone(), device.clone()).unwrap());
    let train = precision_cfg(Precision::F32).train;
    bf16_step_matches_f32(f32_task, bf16_task, &train, &["loss", "mse", "psnr", "grad_norm"]);
}

#[test]
fn bf16_checkpoints_hold_f32_weights() {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let run_dir = tempfile::tempdir().unwrap();
    let cfg = precision_cfg(Precision::Bf16);
    let mut task = TokenizerTask::from_config(&cfg, data.path(), Device::flex().autodiff()).unwrap();
    run(&mut task, &cfg.train, &opts(run_dir.path(), false, None, &cfg)).unwrap();
    let ckpt = jinn_train::checkpoint::latest_good(run_dir.path()).unwrap().checkpoint.expect("a checkpoint");
    assert_eq!(ckpt.state.config["train"]["precision"], "bf16");
    // safetensors: u64 LE header length, then a JSON header with each tensor's dtype.
    let bytes = std::fs::read(ckpt.dir.join(jinn_train::checkpoint::MODEL_FILE)).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let dtypes: Vec<&str> = header
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .map(|(_, v)| v["dtype"].as_str().unwrap())
        .collect();
    assert!(!dtypes.is_empty());
    assert!(dtypes.iter().all(|d| *d == "F32"), "{dtypes:?}");
    // And it loads back into an f32 model.
    let model = ckpt.load_model(cfg.model.vq().unwrap().init(&Device::flex()).unwrap()).unwrap();
    assert!(float_params(&model).iter().all(|(d, _)| *d == burn::tensor::DType::F32));
}
