use super::*;
use crate::tokenizer::task::tests::tiny_dataset;
use jinn_train::train_loop::run;

fn run_cfg() -> LamRunConfig {
    let model = LamConfig { num_codes: 6, reset_threshold: 2, ..crate::lam::tests::tiny() };
    let train = TrainConfig {
        steps: 6,
        batch_size: 2,
        seed: 1,
        lr: jinn_train::schedule::LrSchedule {
            kind: jinn_train::schedule::ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 3e-3,
            decay_end: 0.0,
            warmup_steps: 1,
            decay_steps: 1,
        },
        log_every: 1,
        val_every: 3,
        val_batches: 1,
        image_every: 3,
        ckpt_every: 3,
        ..TrainConfig::default()
    };
    LamRunConfig { model, train, data: DataConfig { seq_len: 3, loader_threads: 1, prefetch: 2 } }
}

use crate::data::test_support::run_options as opts;
use crate::data::val_loader;
use jinn_data::dataset::Dataset;
use std::sync::Arc;

/// A temporary root holding the tiny dataset in `root/data`, the run config and a device.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, LamRunConfig, Device) {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    tiny_dataset(&data);
    (root, data, run_cfg(), Device::flex().autodiff())
}

#[test]
fn resumed_run_with_code_resets_is_bit_identical_and_keeps_counters() {
    resume_is_bit_identical(crate::lam::CodeAssignment::Nearest);
    resume_is_bit_identical(crate::lam::CodeAssignment::Reconstruction);
}

fn resume_is_bit_identical(assignment: crate::lam::CodeAssignment) {
    let (root, data, mut cfg, device) = setup();
    cfg.model.code_assignment = assignment;
    let init = cfg.model.init(&device).unwrap();
    let init_bits = crate::genie::tests::bits(&init);

    let full_dir = root.path().join("full");
    let mut full = LamTask::new(&cfg, &data, init.clone(), device.clone()).unwrap();
    run(&mut full, &cfg.train, &opts(&full_dir, false, None, &cfg)).unwrap();

    let split_dir = root.path().join("split");
    let mut first = LamTask::new(&cfg, &data, init.clone(), device.clone()).unwrap();
    run(&mut first, &cfg.train, &opts(&split_dir, false, Some(3), &cfg)).unwrap();
    let counters_at_3 = first.tracker().last_active.clone();
    drop(first);
    let ckpt = Checkpoint::open(&split_dir.join(jinn_train::checkpoint::step_dir_name(3))).unwrap();
    assert_eq!(ckpt.state.extra[LAST_ACTIVE_KEY], serde_json::json!(counters_at_3));

    let mut second = LamTask::new(&cfg, &data, cfg.model.init(&device).unwrap(), device.clone()).unwrap();
    run(&mut second, &cfg.train, &opts(&split_dir, true, None, &cfg)).unwrap();
    let full_bits = crate::genie::tests::bits(full.model());
    assert_ne!(full_bits, init_bits);
    assert_eq!(crate::genie::tests::bits(second.model()), full_bits);
    assert_eq!(second.tracker(), full.tracker());

    let records =
        jinn_train::metrics_log::read_metrics(&full_dir.join(jinn_train::metrics_log::METRICS_FILE)).unwrap();
    let resets: f64 = records.iter().filter_map(|r| r.metrics.get("codes_reset")).sum();
    // 6 codes, 4 transitions per step, threshold 2: some code goes unused for 2 steps.
    assert!(resets > 0.0, "no dead code was reset");
    assert!(full_dir.join("images/lam_step_000003.gif").is_file());
}

#[test]
fn validation_nmi_scores_codes_against_the_actions_that_caused_them() {
    let (_root, data, cfg, device) = setup();
    let mut task = LamTask::new(&cfg, &data, cfg.model.init(&device).unwrap(), device).unwrap();
    let metrics = task.validate(0, 2).unwrap();

    // Independently: the same validation clips, codes from `action_indices`, and a naive loop
    // pairing the code of transition t → t+1 with the action recorded at frame t.
    let split = Arc::new(Dataset::open(&data.join("val"), cfg.data.seq_len, None).unwrap());
    let mut loader = val_loader(&cfg.train, &cfg.data, split).unwrap();
    let model = task.model().valid();
    let (mut codes, mut truth) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let batch = next_batch(&mut loader).unwrap();
        let ids = model.action_indices(videos(&batch, &Device::flex())).unwrap(); // [b, t−1]
        let ids: Vec<i64> = ids.try_into_vec_as::<i64>().unwrap();
        let actions = batch.actions.as_ref().expect("generated data records actions");
        let t = batch.seq_len;
        for b in 0..batch.batch_size {
            for step in 0..t - 1 {
                codes.push(ids[b * (t - 1) + step]);
                truth.push(actions[b * t + step]);
            }
        }
    }
    let expected = nmi(&codes, &truth, Normalisation::Geometric).unwrap();
    assert!((metrics["nmi"] - expected).abs() < 1e-12, "{} vs {expected}", metrics["nmi"]);
    assert!((0.0..=1.0).contains(&expected));
    assert_eq!(metrics["code_max_cos"], model.vq.max_code_cosine());
    assert!((-1.0..=1.0 + 1e-9).contains(&metrics["code_max_cos"]));
    assert!(!metrics.contains_key("nmi_hindsight") && !metrics.contains_key("hindsight_named"));
}

/// With reconstruction assignment, validation also scores the hindsight codes against the
/// actions and logs how often the encoder names them, checked against the model's own
/// `forward_eval` on the same clips and a naive count.
#[test]
fn validation_scores_hindsight_codes_with_reconstruction_assignment() {
    let (_root, data, mut cfg, device) = setup();
    cfg.model.code_assignment = crate::lam::CodeAssignment::Reconstruction;
    let mut task = LamTask::new(&cfg, &data, cfg.model.init(&device).unwrap(), device).unwrap();
    let metrics = task.validate(0, 2).unwrap();

    let split = Arc::new(Dataset::open(&data.join("val"), cfg.data.seq_len, None).unwrap());
    let mut loader = val_loader(&cfg.train, &cfg.data, split).unwrap();
    let model = task.model().valid();
    let (mut hindsight, mut truth, mut named, mut total) = (Vec::new(), Vec::new(), 0, 0);
    for _ in 0..2 {
        let batch = next_batch(&mut loader).unwrap();
        let out = model.forward_eval(videos(&batch, &Device::flex())).unwrap();
        let best: Vec<i64> =
            out.hindsight.expect("reconstruction assignment").try_into_vec_as::<i64>().unwrap();
        let nearest: Vec<i64> =
            model.action_indices(videos(&batch, &Device::flex())).unwrap().try_into_vec_as().unwrap();
        let actions = batch.actions.as_ref().unwrap();
        let t = batch.seq_len;
        for b in 0..batch.batch_size {
            for step in 0..t - 1 {
                let i = b * (t - 1) + step;
                hindsight.push(best[i]);
                truth.push(actions[b * t + step]);
                named += usize::from(best[i] == nearest[i]);
                total += 1;
            }
        }
    }
    let expected = nmi(&hindsight, &truth, Normalisation::Geometric).unwrap();
    assert!(
        (metrics["nmi_hindsight"] - expected).abs() < 1e-12,
        "{} vs {expected}",
        metrics["nmi_hindsight"]
    );
    assert_eq!(metrics["hindsight_named"], named as f64 / total as f64);
    assert!(metrics.contains_key("nmi"));
}

/// A LAM checkpoint written before `encoder_frame_difference`, `decoder_residual` and
/// `code_assignment` existed
/// reads as the defaults (so `--resume` accepts it), while a stored non-default value stays
/// visible.
#[test]
fn stored_model_config_without_newer_keys_reads_as_their_defaults() {
    let (_root, data, cfg, device) = setup();
    let task = LamTask::new(&cfg, &data, cfg.model.init(&device).unwrap(), device).unwrap();
    let current = jinn_train::config::to_json(&cfg.model);
    let mut older = current.clone();
    for newer in ["encoder_frame_difference", "decoder_residual", "code_assignment"] {
        older.as_object_mut().unwrap().remove(newer).unwrap();
    }
    assert_ne!(older, current);
    assert_eq!(task.normalise_model_config(&older), current);
    let mut other = current.clone();
    other["encoder_frame_difference"] = serde_json::json!(true);
    assert_eq!(task.normalise_model_config(&other), other);
}

#[test]
fn bf16_step_updates_f32_master_weights_with_a_loss_close_to_f32() {
    // Both encoder inputs (frame differences) and both code assignments compute in bf16. With
    // hindsight assignment the loss adds the cross-entropy of naming the code whose prediction
    // is best; near-tied codes can swap under bf16 rounding, so only the MSE is compared there.
    for (difference, assignment, keys) in [
        (false, crate::lam::CodeAssignment::Nearest, &["loss", "mse"][..]),
        (true, crate::lam::CodeAssignment::Reconstruction, &["mse"][..]),
    ] {
        let (_root, data, mut cfg, device) = setup();
        (cfg.model.encoder_frame_difference, cfg.model.code_assignment) = (difference, assignment);
        let init = jinn_nn::init::seeded_init(&device, 7, || cfg.model.init(&device)).unwrap();
        let [f32_task, bf16_task] = [Precision::F32, Precision::Bf16].map(|p| {
            let mut cfg = cfg.clone();
            cfg.train.precision = p;
            LamTask::new(&cfg, &data, init.clone(), device.clone()).unwrap()
        });
        crate::precision_check::bf16_step_matches_f32(f32_task, bf16_task, &cfg.train, keys);
    }
}
