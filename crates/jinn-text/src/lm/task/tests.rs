use super::*;
use crate::lm::config::Arch;
use crate::lm::data::{Document, Split};
use burn::module::{ModuleVisitor, Param};
use jinn_train::train_loop::{run, RunOptions};

fn toy_data(dir: &Path) -> LmData {
    let doc = |name: &str, text: &str| Document { name: name.into(), text: text.into() };
    let split = Split {
        train: vec![doc("a.txt", &"abcabd abcabe ".repeat(8)), doc("b.txt", &"xyzxyz ".repeat(8))],
        val: vec![doc("c.txt", &"abcabd xyz ".repeat(4))],
    };
    LmData::write(&split, &TextTokenizer::Bytes, dir).unwrap()
}

fn toy_config(arch: Arch, steps: u64) -> LmRunConfig {
    let mut cfg = LmRunConfig::default();
    cfg.model =
        LmModelConfig { arch, d_model: 16, depth: 2, num_heads: 2, d_ffn: 32, max_seq: 12, ..cfg.model };
    let tr = &mut cfg.train;
    (tr.steps, tr.batch_size, tr.grad_accum) = (steps, 4, 2);
    (tr.lr.warmup_steps, tr.lr.decay_steps, tr.lr.max_lr) = (2, 2, 3e-3);
    (tr.log_every, tr.val_every, tr.val_batches, tr.ckpt_every, tr.keep_last) = (2, 3, 2, 3, 5);
    cfg
}

fn opts(dir: &Path, cfg: &LmRunConfig, resume: bool, stop_at: Option<u64>) -> RunOptions {
    RunOptions {
        run_dir: dir.to_path_buf(),
        config_json: jinn_train::config::to_json(cfg),
        resume,
        stop_at,
        metrics_head_len: 10,
    }
}

/// Every parameter value, in module order.
fn params(model: &LanguageModel) -> Vec<Vec<f32>> {
    struct Collect(Vec<Vec<f32>>);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.val().try_into_vec_as::<f32>().unwrap());
        }
    }
    let mut c = Collect(Vec::new());
    model.visit(&mut c);
    c.0
}

#[test]
fn resumed_run_equals_uninterrupted_run() {
    let data_dir = tempfile::tempdir().unwrap();
    let data = toy_data(data_dir.path());
    for arch in [Arch::Rsf, Arch::Standard] {
        let cfg = toy_config(arch, 6);
        let device = Device::flex().autodiff();
        let (full_dir, split_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut full = LmTask::new(&cfg, data.clone(), &device).unwrap();
        run(&mut full, &cfg.train, &opts(full_dir.path(), &cfg, false, None)).unwrap();
        let mut first = LmTask::new(&cfg, data.clone(), &device).unwrap();
        run(&mut first, &cfg.train, &opts(split_dir.path(), &cfg, false, Some(3))).unwrap();
        let mut second = LmTask::new(&cfg, data.clone(), &device).unwrap();
        let summary = run(&mut second, &cfg.train, &opts(split_dir.path(), &cfg, true, None)).unwrap();
        assert_eq!((summary.start_step, summary.end_step), (3, 6));
        assert_eq!(params(full.model()), params(second.model()), "{arch:?}: resume must be exact");

        // The run loads back for inference with its tokenizer and gives the same logits.
        let loaded = TrainedLm::load(full_dir.path(), &Device::flex()).unwrap();
        assert_eq!((loaded.step, loaded.model.arch()), (6, arch));
        assert!(matches!(loaded.tokenizer, TextTokenizer::Bytes));
        assert_eq!(params(&loaded.model), params(full.model()));
    }
}

#[test]
fn validation_reports_loss_and_bits_per_byte() {
    let data_dir = tempfile::tempdir().unwrap();
    let cfg = toy_config(Arch::Rsf, 6);
    let mut task = LmTask::new(&cfg, toy_data(data_dir.path()), &Device::flex().autodiff()).unwrap();
    let m = task.validate(0, 2).unwrap();
    // Bytes: one token per byte, so bits per byte = nats per token / ln 2.
    assert!((m["bits_per_byte"] - m["loss"] / std::f64::consts::LN_2).abs() < 1e-9, "{m:?}");
    // An untrained model is near uniform over 256 bytes: ln 256 ≈ 5.55 nats.
    assert!((m["loss"] - 256f64.ln()).abs() < 1.0, "{m:?}");
}

#[test]
fn too_short_data_and_bad_precision_are_config_errors() {
    let data_dir = tempfile::tempdir().unwrap();
    let data = toy_data(data_dir.path());
    let mut cfg = toy_config(Arch::Rsf, 6);
    cfg.model.max_seq = 1000;
    let err = LmTask::new(&cfg, data.clone(), &Device::flex().autodiff()).err().unwrap().to_string();
    assert!(err.contains("model.max_seq"), "{err}");
    let mut cfg = toy_config(Arch::Rsf, 6);
    cfg.model.num_heads = 3;
    let err = LmTask::new(&cfg, data, &Device::flex().autodiff()).err().unwrap().to_string();
    assert!(err.contains("model.num_heads"), "{err}");
}

#[test]
fn spread_starts_cover_the_stream() {
    assert_eq!(spread_starts(100, 9, 4), vec![0, 30, 60, 90]);
    assert_eq!(spread_starts(11, 9, 4), vec![0, 1]);
    assert_eq!(spread_starts(10, 9, 3), vec![0]);
}

#[test]
fn stream_loss_predicts_every_token_once() {
    let device = Device::flex();
    let model =
        LmModelConfig { d_model: 8, depth: 1, num_heads: 2, d_ffn: 8, max_seq: 4, ..Default::default() }
            .init(10, 0, &device)
            .unwrap();
    let stream: Vec<u32> = (0..14).map(|i| i % 10).collect();
    let (loss, predicted) = stream_loss(&model, &stream, 2);
    assert_eq!(predicted, 12, "windows at 0, 4, 8 predict tokens 1..=12");
    // Reference: the loss at every position of each window, averaged.
    let mut total = 0.0;
    for s in [0usize, 4, 8] {
        let ids = |a: usize| {
            let v: Vec<i64> = stream[a..a + 4].iter().map(|&t| t as i64).collect();
            Tensor::<2, Int>::from_data(TensorData::new(v, [1, 4]), &device)
        };
        total += scalar(LanguageModel::loss(model.forward(ids(s)), ids(s + 1))) * 4.0;
    }
    assert!((loss - total / 12.0).abs() < 1e-5, "{loss} vs {}", total / 12.0);
}
