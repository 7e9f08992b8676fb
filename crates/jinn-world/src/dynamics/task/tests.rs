use super::*;
use crate::dynamics::DynamicsKind;
use crate::genie::tests::{bits, component_runs, reversible, tiny_dynamics};
use crate::genie::{assemble_genie, ActionSource};
use crate::tokenizer::task::tests::tiny_dataset;
use burn::tensor::Device;
use jinn_data::dataset::Dataset;
use jinn_train::train_loop::{run, StepContext, Updater};
use std::path::PathBuf;

fn run_cfg(model: GenieConfig) -> GenieRunConfig {
    let train = TrainConfig {
        steps: 4,
        batch_size: 2,
        seed: 3,
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

/// A temporary root with the tiny dataset in `root/data` and tokenizer and LAM runs: (root,
/// data, tokenizer run, LAM run).
fn runs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    tiny_dataset(&data);
    let (tok, lam) = component_runs(root.path());
    (root, data, tok, lam)
}

#[test]
fn resumed_maskgit_run_with_co_trained_lam_is_bit_identical() {
    resume_is_bit_identical(tiny_dynamics(DynamicsKind::MASKGIT));
}

#[test]
fn resumed_reversible_run_is_bit_identical() {
    let dynamics = reversible(tiny_dynamics(DynamicsKind::MASKGIT));
    resume_is_bit_identical(dynamics);
}

fn resume_is_bit_identical(dynamics: DynamicsConfig) {
    let (root, data, tok, _) = runs();
    let device = Device::flex().autodiff();
    let source = ActionSource::CoTrain(crate::lam::tests::tiny());
    let (init, genie_cfg) = assemble_genie(&tok, source.clone(), &dynamics, &device).unwrap();
    let init_bits = bits(&init);
    let cfg = run_cfg(genie_cfg);

    let full_dir = root.path().join("full");
    let mut full = DynamicsTask::new(&cfg, &data, init.clone()).unwrap();
    run(&mut full, &cfg.train, &opts(&full_dir, false, None, &cfg)).unwrap();

    let split_dir = root.path().join("split");
    let mut first = DynamicsTask::new(&cfg, &data, init.clone()).unwrap();
    run(&mut first, &cfg.train, &opts(&split_dir, false, Some(2), &cfg)).unwrap();
    drop(first);
    let (other, _) = assemble_genie(&tok, source, &dynamics, &device).unwrap();
    let mut second = DynamicsTask::new(&cfg, &data, other).unwrap();
    let summary = run(&mut second, &cfg.train, &opts(&split_dir, true, None, &cfg)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (2, 4));

    let full_bits = bits(full.model());
    assert_ne!(full_bits, init_bits, "training moved the weights");
    assert_eq!(bits(second.model()), full_bits);
    assert_eq!(bits(&full.model().tokenizer), bits(&init.tokenizer), "the tokenizer is frozen");
    assert_ne!(bits(&full.model().lam), bits(&init.lam), "the co-trained LAM trains");

    let records =
        jinn_train::metrics_log::read_metrics(&full_dir.join(jinn_train::metrics_log::METRICS_FILE)).unwrap();
    let val = records.iter().find(|r| r.split == "val").expect("a validation record");
    for key in [
        "loss",
        "cross_entropy_loss",
        "masked_token_top1_accuracy",
        "masked_token_top5_accuracy",
        "entropy",
        "psnr",
        "ssim",
        "codebook_usage_lam",
    ] {
        assert!(val.metrics.get(key).is_some_and(|v| v.is_finite()), "val {key}: {:?}", val.metrics);
    }
    // Logged training steps carry the token metrics; a step that will not be logged skips them.
    let train: Vec<_> = records.iter().filter(|r| r.split == "train").collect();
    assert!(!train.is_empty(), "training steps were logged");
    for r in &train {
        assert!(r.metrics.contains_key("masked_token_top1_accuracy"), "step {}: {:?}", r.step, r.metrics);
    }
    let ctx = StepContext::new(&cfg.train, 4, false);
    let unlogged = Updater::new(&full, &cfg.train.optim).unwrap().step(&mut full, &ctx).unwrap();
    assert!(
        unlogged["loss"].is_finite() && !unlogged.contains_key("masked_token_top1_accuracy"),
        "{unlogged:?}"
    );
    assert!(full_dir.join("images/dynamics_step_000004.gif").is_file());
    // The run loads back whole from its own checkpoint.
    let (loaded, loaded_cfg, step) = crate::genie::load_genie(&full_dir, &Device::flex()).unwrap();
    assert_eq!((loaded_cfg, step), (cfg.model.clone(), 4));
    assert_eq!(bits(&loaded), full_bits);
}

#[test]
fn ground_truth_actions_train_causal_dynamics() {
    let (root, data, tok, _) = runs();
    let num_actions =
        Dataset::open(&data.join("train"), 3, None).unwrap().metadata().unwrap().num_actions.unwrap();
    let device = Device::flex().autodiff();
    let (genie, genie_cfg) = assemble_genie(
        &tok,
        ActionSource::GroundTruth { num_actions },
        &tiny_dynamics(DynamicsKind::CAUSAL),
        &device,
    )
    .unwrap();
    let mut cfg = run_cfg(genie_cfg);
    cfg.train.steps = 2;
    let mut task = DynamicsTask::new(&cfg, &data, genie.clone()).unwrap();
    run(&mut task, &cfg.train, &opts(&root.path().join("run"), false, None, &cfg)).unwrap();
    assert_ne!(bits(&task.model().action_embed), bits(&genie.action_embed), "action embeddings train");
}

#[test]
fn bf16_step_updates_f32_master_weights_with_a_loss_close_to_f32() {
    let (_root, data, tok, lam) = runs();
    let device = Device::flex().autodiff();
    // MaskGIT with every input on (code embeddings of a trained LAM, the previous frame,
    // changed-token weights), and causal dynamics on a co-trained LAM.
    let mut maskgit = DynamicsConfig { lam_code_embedding: true, ..tiny_dynamics(DynamicsKind::MASKGIT) };
    let settings = maskgit.maskgit_mut().unwrap();
    settings.previous_frame_input = true;
    settings.tokens.changed_token_weight = 3.0;
    let causal = tiny_dynamics(DynamicsKind::CAUSAL);
    let co_trained = ActionSource::CoTrain(crate::lam::tests::tiny());
    for (dynamics, source) in [(maskgit, ActionSource::LamRun(&lam)), (causal, co_trained)] {
        let (init, genie_cfg) = assemble_genie(&tok, source, &dynamics, &device).unwrap();
        let cfg = run_cfg(genie_cfg);
        let [f32_task, bf16_task] = [Precision::F32, Precision::Bf16].map(|p| {
            let mut cfg = cfg.clone();
            cfg.train.precision = p;
            DynamicsTask::new(&cfg, &data, init.clone()).unwrap()
        });
        crate::precision_check::bf16_step_matches_f32(f32_task, bf16_task, &cfg.train, &["loss"]);
    }
}

#[test]
fn reversible_dynamics_refuse_bf16_by_name() {
    let (_root, data, tok, _) = runs();
    let dynamics = reversible(tiny_dynamics(DynamicsKind::MASKGIT));
    let source = ActionSource::CoTrain(crate::lam::tests::tiny());
    let (genie, genie_cfg) = assemble_genie(&tok, source, &dynamics, &Device::flex().autodiff()).unwrap();
    let task = DynamicsTask::new(&run_cfg(genie_cfg), &data, genie).unwrap();
    jinn_train::train_loop::ensure_precision(&task, Precision::F32).unwrap();
    let err = jinn_train::train_loop::ensure_precision(&task, Precision::Bf16).unwrap_err().to_string();
    assert!(err.contains("train.precision") && err.contains("f32 only"), "{err}");
}

/// `model.ground_lam_codes`: the task pairs the trained LAM's codes with the recorded actions
/// and trains on the grounded codes; a co-trained LAM is an error naming the field, recorded
/// actions have nothing to ground.
#[test]
fn grounded_training_reads_the_codes_the_play_page_names_and_needs_a_trained_lam() {
    let (root, data, tok, lam) = runs();
    let device = Device::flex().autodiff();
    let mut dynamics = DynamicsConfig { lam_code_embedding: true, ..tiny_dynamics(DynamicsKind::MASKGIT) };
    dynamics.tokens_mut().unwrap().ground_lam_codes = true;
    let (genie, genie_cfg) = assemble_genie(&tok, ActionSource::LamRun(&lam), &dynamics, &device).unwrap();
    let mut cfg = run_cfg(genie_cfg);
    cfg.train.steps = 2;
    let mut task = DynamicsTask::new(&cfg, &data, genie.clone()).unwrap();
    let counts = crate::code_partners::lam_code_counts(
        &genie,
        &data.join("train"),
        jinn_data::FrameShape::rgb(16, 16),
        cfg.data.seq_len,
        &device,
    )
    .unwrap()
    .expect("the tiny dataset records actions");
    let grounding = task.grounding.clone().expect("grounded");
    assert_eq!(grounding.action_of_code.len(), 4);
    assert_eq!(grounding, CodeGrounding::from_counts(&counts, 4, grounding.code_for_action.len()));
    run(&mut task, &cfg.train, &opts(&root.path().join("run"), false, None, &cfg)).unwrap();

    let source = ActionSource::CoTrain(crate::lam::tests::tiny());
    let mut co_trained = tiny_dynamics(DynamicsKind::MASKGIT);
    co_trained.tokens_mut().unwrap().ground_lam_codes = true;
    let (genie, genie_cfg) = assemble_genie(&tok, source, &co_trained, &device).unwrap();
    let err = DynamicsTask::new(&run_cfg(genie_cfg), &data, genie).err().unwrap().to_string();
    assert!(err.contains("model.ground_lam_codes") && err.contains("--lam"), "{err}");
    let source = ActionSource::GroundTruth { num_actions: 4 };
    let (genie, genie_cfg) = assemble_genie(&tok, source, &co_trained, &device).unwrap();
    assert!(DynamicsTask::new(&run_cfg(genie_cfg), &data, genie).unwrap().grounding.is_none());

    // Data that records no actions (as a video import writes it) has nothing to ground in.
    let silent = root.path().join("silent");
    without_actions(&data, &silent);
    let (genie, genie_cfg) = assemble_genie(&tok, ActionSource::LamRun(&lam), &dynamics, &device).unwrap();
    let err = DynamicsTask::new(&run_cfg(genie_cfg), &silent, genie).err().unwrap().to_string();
    assert!(
        err.contains("model.ground_lam_codes") && err.contains(&silent.join("train").display().to_string()),
        "{err}"
    );
}

/// The dataset at `data` written again at `to` with every record's actions left out.
fn without_actions(data: &std::path::Path, to: &std::path::Path) {
    use jinn_data::split_writer::SplitWriter;
    for split in ["train", "val"] {
        let source = Dataset::open(&data.join(split), 1, None).unwrap();
        let mut writer = SplitWriter::create(to, split, 4, Default::default()).unwrap();
        for r in source.records() {
            let record = source.read_record(r.file as usize, r.record as u64).unwrap();
            assert!(record.actions.is_some(), "the tiny dataset records actions");
            let shape = source.frame_shape();
            writer.write_episode(&record.raw_video, shape, None, record.sequence_length, None).unwrap();
        }
        writer.finish().unwrap();
    }
    std::fs::copy(data.join("metadata.json"), to.join("metadata.json")).unwrap();
}
