use super::*;
use crate::optim::OptimConfig;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, TensorData};

/// Two nested layers, so parameter paths have depth.
#[derive(Module, Debug)]
struct Net {
    first: Linear,
    second: Linear,
}

impl Net {
    fn new(device: &Device) -> Net {
        Net { first: LinearConfig::new(3, 4).init(device), second: LinearConfig::new(4, 2).init(device) }
    }
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.second.forward(self.first.forward(x).tanh())
    }
}

fn train_step(model: Net, optim: &mut ModuleOptimizer, device: &Device, k: f32) -> Net {
    let x = Tensor::<2>::from_data(TensorData::from([[1.0f32, -2.0, 0.5], [0.3, 0.1, -1.0]]), device)
        .mul_scalar(k);
    let loss = model.forward(x).square().mean();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    optim.step(1e-2, model, grads)
}

/// All parameter values as raw bits, in module-path order.
fn bits(model: &Net) -> Vec<(String, Vec<u32>)> {
    #[derive(Default)]
    struct Bits(Vec<String>, Vec<(String, Vec<u32>)>);
    impl ModuleVisitor for Bits {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.0.push(name.into());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.0.pop();
        }
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            let v = p.val().into_data().try_to_vec::<f32>().unwrap();
            self.1.push((self.0.join("."), v.into_iter().map(f32::to_bits).collect()));
        }
    }
    let mut b = Bits::default();
    model.visit(&mut b);
    b.1
}

fn state(step: u64) -> TrainState {
    TrainState {
        step,
        model_kind: "tiny".into(),
        config: serde_json::json!({"model": {"dim": 4}, "train": {"steps": 10}}),
        seed: 7,
        loader: Some(LoaderPosition { seed: 7, seq_len: 16, num_records: 10, next_sample: step * 8 }),
        val_loader: None,
        metrics_head: vec![MetricRecord {
            step,
            split: "train".into(),
            wall_time: 1.0,
            metrics: [("loss".to_string(), 0.5)].into(),
        }],
        extra: [("codes_used".to_string(), serde_json::json!([1, 2]))].into_iter().collect(),
    }
}

#[test]
fn round_trip_is_bit_exact_and_resume_continues_identically() {
    let device = Device::flex().autodiff();
    let cfg = OptimConfig::default();
    let mut optim = cfg.init().unwrap();
    let mut model = Net::new(&device);
    for k in [1.0, 0.5] {
        model = train_step(model, &mut optim, &device, k);
    }
    let run = tempfile::tempdir().unwrap();
    let dir = save(run.path(), &model, &optim, state(2)).unwrap();
    assert_eq!(dir, run.path().join("step_000002"));

    let ckpt = Checkpoint::open(&dir).unwrap();
    assert_eq!(ckpt.state, state(2));
    // A differently initialised model with fresh parameter ids, and a fresh optimiser.
    let loaded = ckpt.load_model(Net::new(&device)).unwrap();
    let mut loaded_optim = ckpt.load_optimizer(cfg.init().unwrap()).unwrap();
    assert_eq!(bits(&loaded), bits(&model));
    assert_eq!(param_ids(&loaded), param_ids(&model));

    // One more step on both: identical only if the Adam moments and counters came back.
    let a = train_step(model, &mut optim, &device, 2.0);
    let b = train_step(loaded, &mut loaded_optim, &device, 2.0);
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn fresh_optimizer_after_load_would_diverge() {
    // Guards the test above: losing the optimiser state must change the next step.
    let device = Device::flex().autodiff();
    let cfg = OptimConfig::default();
    let mut optim = cfg.init().unwrap();
    let mut model = Net::new(&device);
    model = train_step(model, &mut optim, &device, 1.0);
    let run = tempfile::tempdir().unwrap();
    let dir = save(run.path(), &model, &optim, state(1)).unwrap();
    let loaded = Checkpoint::open(&dir).unwrap().load_model(Net::new(&device)).unwrap();
    let a = train_step(model, &mut optim, &device, 2.0);
    let b = train_step(loaded, &mut cfg.init().unwrap(), &device, 2.0);
    assert_ne!(bits(&a), bits(&b));
}

#[test]
fn wrong_model_shape_or_kind_is_refused() {
    let device = Device::flex();
    let model = Net::new(&device);
    let optim = OptimConfig::default().init().unwrap();
    let run = tempfile::tempdir().unwrap();
    let dir = save(run.path(), &model, &optim, state(5)).unwrap();
    let ckpt = Checkpoint::open(&dir).unwrap();

    let other =
        Net { first: LinearConfig::new(3, 5).init(&device), second: LinearConfig::new(5, 2).init(&device) };
    let err = ckpt.load_model(other).unwrap_err().to_string();
    assert!(err.contains("model.safetensors"), "{err}");

    let err = ckpt.state.ensure_compatible(&dir, "lam", None, |m| m.clone()).unwrap_err().to_string();
    assert!(err.contains("`tiny`") && err.contains("`lam`"), "{err}");
    let err = ckpt
        .state
        .ensure_compatible(&dir, "tiny", Some(&serde_json::json!({"dim": 8})), |m| m.clone())
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.dim") && err.contains('4') && err.contains('8'), "{err}");
    ckpt.state.ensure_compatible(&dir, "tiny", Some(&serde_json::json!({"dim": 4})), |m| m.clone()).unwrap();
    // Another `kind` is named before the keys that only one of the kinds has.
    let other_kind = serde_json::json!({"kind": "b", "alpha": 1});
    let err =
        ckpt.state.ensure_compatible(&dir, "tiny", Some(&other_kind), |_| serde_json::json!({"kind": "a"}));
    let err = err.unwrap_err().to_string();
    assert!(err.contains("`model.kind`") && err.contains("\"a\"") && err.contains("\"b\""), "{err}");

    // A field added since the checkpoint was written: compared as stored it is a difference;
    // read through the config type it takes its default, so only a non-default value differs.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Grown {
        dim: usize,
        #[serde(default)]
        gate: bool,
    }
    let grown = |gate: bool| serde_json::json!({"dim": 4, "gate": gate});
    let err = ckpt.state.ensure_compatible(&dir, "tiny", Some(&grown(false)), |m| m.clone()).unwrap_err();
    assert!(err.to_string().contains("model.gate"), "{err}");
    let typed = crate::config::normalise::<Grown>;
    ckpt.state.ensure_compatible(&dir, "tiny", Some(&grown(false)), typed).unwrap();
    let err = ckpt.state.ensure_compatible(&dir, "tiny", Some(&grown(true)), typed).unwrap_err();
    assert!(err.to_string().contains("model.gate") && err.to_string().contains("true"), "{err}");
}

/// Naive retention: keep a step iff it is among the `k` largest or a multiple of `p`.
fn naive_delete(steps: &[u64], k: usize, p: u64) -> Vec<u64> {
    let mut sorted = steps.to_vec();
    sorted.sort();
    let newest: Vec<u64> = sorted.iter().rev().take(k).copied().collect();
    sorted.into_iter().filter(|s| !newest.contains(s) && (p == 0 || s % p != 0)).collect()
}

#[test]
fn retention_pure_function() {
    let steps: Vec<u64> = (0..=100).step_by(10).collect();
    assert_eq!(steps_to_delete(&steps, 3, 20), vec![10, 30, 50, 70]);
    assert_eq!(steps_to_delete(&steps, 0, 0), steps);
    assert!(steps_to_delete(&steps, 100, 0).is_empty());
    assert_eq!(steps_to_delete(&[5, 1, 3], 1, 0), vec![1, 3]);
    for k in 0..5 {
        for p in [0, 1, 3, 7] {
            let steps: Vec<u64> = vec![3, 6, 7, 9, 12, 14, 21, 22];
            assert_eq!(steps_to_delete(&steps, k, p), naive_delete(&steps, k, p), "k {k} p {p}");
        }
    }
}

#[test]
fn retention_on_disk() {
    let device = Device::flex();
    let model = Net::new(&device);
    let optim = OptimConfig::default().init().unwrap();
    let run = tempfile::tempdir().unwrap();
    let data = snapshot(&model, &optim, state(0)).unwrap();
    for step in [1, 2, 4, 5, 6, 8] {
        write_checkpoint(run.path(), &CheckpointData { state: state(step), ..data.clone() }).unwrap();
    }
    assert_eq!(apply_retention(run.path(), 2, 4).unwrap(), vec![1, 2, 5]);
    assert_eq!(list_steps(run.path()).unwrap(), vec![4, 6, 8]);
}

#[test]
fn corrupted_checkpoints_are_skipped_and_named() {
    let device = Device::flex();
    let model = Net::new(&device);
    let optim = OptimConfig::default().init().unwrap();
    let run = tempfile::tempdir().unwrap();
    let data = snapshot(&model, &optim, state(0)).unwrap();
    for step in [10, 20, 30] {
        write_checkpoint(run.path(), &CheckpointData { state: state(step), ..data.clone() }).unwrap();
    }
    // step 30: truncated weights; step 20: one flipped bit, same length.
    let m30 = run.path().join("step_000030").join(MODEL_FILE);
    let len = std::fs::metadata(&m30).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&m30).unwrap().set_len(len / 2).unwrap();
    let m20 = run.path().join("step_000020").join(MODEL_FILE);
    let mut bytes = std::fs::read(&m20).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x10;
    std::fs::write(&m20, bytes).unwrap();
    // A crash mid-write of step 40 left only a temp directory.
    let tmp = run.path().join(".tmp-step_000040-12345");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join(MODEL_FILE), b"partial").unwrap();

    let found = latest_good(run.path()).unwrap();
    assert_eq!(found.checkpoint.as_ref().unwrap().state.step, 10);
    let names: Vec<String> =
        found.skipped.iter().map(|(d, _)| d.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(names, vec!["step_000030", "step_000020"]);
    assert!(found.skipped[0].1.contains("truncated"), "{}", found.skipped[0].1);
    assert!(found.skipped[1].1.contains("CRC32C"), "{}", found.skipped[1].1);
    // The chosen one really loads.
    found.checkpoint.unwrap().load_model(Net::new(&device)).unwrap();

    assert_eq!(remove_stale_temp_dirs(run.path()).unwrap(), vec![tmp.clone()]);
    assert!(!tmp.exists());
}

#[test]
fn missing_manifest_or_bad_state_is_not_good() {
    let device = Device::flex();
    let model = Net::new(&device);
    let optim = OptimConfig::default().init().unwrap();
    let run = tempfile::tempdir().unwrap();
    let dir = save(run.path(), &model, &optim, state(3)).unwrap();
    std::fs::remove_file(dir.join(MANIFEST_FILE)).unwrap();
    let found = latest_good(run.path()).unwrap();
    assert!(found.checkpoint.is_none());
    assert!(found.skipped[0].1.contains(MANIFEST_FILE), "{}", found.skipped[0].1);
    assert!(latest_good(&run.path().join("nope")).unwrap().checkpoint.is_none());
}

#[test]
fn step_dir_names() {
    assert_eq!(step_dir_name(123), "step_000123");
    assert_eq!(step_dir_name(12_345_678), "step_12345678");
    assert_eq!(parse_step_dir("step_000123"), Some(123));
    assert_eq!(parse_step_dir("step_12345678"), Some(12_345_678));
    assert_eq!(parse_step_dir("step_123"), None);
    assert_eq!(parse_step_dir(".tmp-step_000123-1"), None);
    assert_eq!(parse_step_dir("step_00012x"), None);
}
