//! `train.precision = "bf16"` on the tokenizer: bf16 compute, f32 master weights and
//! checkpoints.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{DType, Device, Tensor};
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_data::FrameShape;
use jinn_train::checkpoint::{latest_good, MODEL_FILE};
use jinn_train::precision::Precision;
use jinn_train::train_loop::{run, RunOptions, StepContext, TrainTask, Updater};
use jinn_world::{CoderConfig, Tokenizer, TokenizerConfig, TokenizerRunConfig, TokenizerTask, VqConfig};
use std::path::Path;

/// Four short 16×16 breakout episodes: three train, one val.
fn tiny_dataset(dir: &Path) {
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

/// A tiny tokenizer; patch 6 pads 16×16 frames to 18×18, so the padding path runs in bf16 too.
fn run_cfg(precision: Precision) -> TokenizerRunConfig {
    let mut cfg = TokenizerRunConfig {
        model: TokenizerConfig::Vq(VqConfig {
            coder: CoderConfig {
                height: 16,
                width: 16,
                channels: 3,
                patch: 6,
                model_dim: 16,
                ffn_dim: 32,
                num_heads: 2,
                encoder_blocks: 1,
                decoder_blocks: 1,
                latent_dim: 8,
            },
            num_codes: 32,
            codebook_dropout: 0.0,
            vq_beta: 0.25,
            reset_threshold: 0,
            remat: false,
        }),
        ..Default::default()
    };
    cfg.data.seq_len = 3;
    cfg.train.steps = 2;
    cfg.train.batch_size = 2;
    cfg.train.log_every = 1;
    cfg.train.val_every = 0;
    cfg.train.image_every = 0;
    cfg.train.ckpt_every = 2;
    cfg.train.precision = precision;
    cfg.train.lr.warmup_steps = 1;
    cfg.train.lr.decay_steps = 1;
    cfg
}

/// (dtype, values) of every float parameter, in visiting order.
fn params(model: &Tokenizer) -> Vec<(DType, Vec<f32>)> {
    struct P(Vec<(DType, Vec<f32>)>);
    impl ModuleVisitor for P {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            let t = p.val();
            self.0.push((t.dtype(), t.try_into_vec_as::<f32>().unwrap()));
        }
    }
    let mut p = P(Vec::new());
    model.visit(&mut p);
    p.0
}

#[test]
fn bf16_step_updates_f32_master_weights_with_a_loss_close_to_f32() {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let device = Device::flex().autodiff();
    // A fixed initialisation: the other test initialises at the same time from the shared generator.
    let init =
        jinn_nn::init::seeded_init(&device, 7, || run_cfg(Precision::F32).model.vq()?.init(&device)).unwrap();
    let before = params(&init);
    let train = run_cfg(Precision::F32).train;
    let ctx = StepContext { lr: 1e-2, clip_norm: Some(1.0), ..StepContext::new(&train, 0, true) };

    let mut tasks = [Precision::F32, Precision::Bf16]
        .map(|p| TokenizerTask::new(&run_cfg(p), data.path(), init.clone(), device.clone()).unwrap());
    let [m32, m16] = [0, 1].map(|i| {
        let mut updater = Updater::new(&tasks[i], &train.optim).unwrap();
        updater.step(&mut tasks[i], &ctx).unwrap()
    });
    for key in ["loss", "mse", "psnr", "grad_norm"] {
        let (a, b) = (m32[key], m16[key]);
        assert!(b.is_finite(), "bf16 {key} = {b}");
        assert!((a - b).abs() <= 0.03 * a.abs(), "{key}: f32 {a} vs bf16 {b}");
    }
    assert_ne!(m32["loss"], m16["loss"], "the bf16 forward rounds differently");

    let after = params(tasks[1].model());
    assert_eq!(after.len(), before.len());
    let mut moved = 0;
    for ((d, w), (_, w0)) in after.iter().zip(&before) {
        assert_eq!(*d, DType::F32, "master weights stay f32");
        moved += usize::from(w != w0);
    }
    assert_eq!(moved, before.len(), "every parameter got an update");
}

#[test]
fn bf16_checkpoints_hold_f32_weights() {
    let data = tempfile::tempdir().unwrap();
    tiny_dataset(data.path());
    let run_dir = tempfile::tempdir().unwrap();
    let cfg = run_cfg(Precision::Bf16);
    let mut task = TokenizerTask::from_config(&cfg, data.path(), Device::flex().autodiff()).unwrap();
    let opts = RunOptions {
        run_dir: run_dir.path().to_path_buf(),
        config_json: jinn_train::config::to_json(&cfg),
        resume: false,
        stop_at: None,
        metrics_head_len: 4,
    };
    run(&mut task, &cfg.train, &opts).unwrap();
    let ckpt = latest_good(run_dir.path()).unwrap().checkpoint.expect("a checkpoint");
    assert_eq!(ckpt.state.config["train"]["precision"], "bf16");
    // safetensors: u64 LE header length, then a JSON header with each tensor's dtype.
    let bytes = std::fs::read(ckpt.dir.join(MODEL_FILE)).unwrap();
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
    assert!(params(&model).iter().all(|(d, _)| *d == DType::F32));
}
