use super::*;
use crate::dynamics::DynamicsKind;
use crate::tokenizer::tests::tiny_coder;
use crate::tokenizer::VqConfig;
use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use jinn_train::checkpoint::{save, TrainState};
use jinn_train::optim::OptimConfig;

pub(crate) fn tiny_tokenizer() -> TokenizerConfig {
    TokenizerConfig::Vq(VqConfig {
        coder: tiny_coder(),
        num_codes: 16,
        codebook_dropout: 0.0,
        vq_beta: 0.25,
        reset_threshold: 0,
        remat: false,
    })
}

/// The VQ config of [`tiny_tokenizer`].
pub(crate) fn tiny_vq() -> VqConfig {
    tiny_tokenizer().vq().unwrap().clone()
}

pub(crate) fn tiny_dynamics(kind: DynamicsKind) -> DynamicsConfig {
    let mut cfg = DynamicsConfig {
        model_dim: 16,
        ffn_dim: 32,
        num_heads: 2,
        num_blocks: 1,
        action_dim: 4,
        ..DynamicsConfig::default_for(kind)
    };
    if let Some(tokens) = cfg.tokens_mut() {
        tokens.z_loss_weight = 0.1;
    }
    cfg
}

/// `cfg` with a reversible backbone (MaskGIT or causal).
pub(crate) fn reversible(mut cfg: DynamicsConfig) -> DynamicsConfig {
    cfg.tokens_mut().expect("token dynamics").reversible = true;
    cfg
}

/// Write `model` as a step-`step` checkpoint of `kind` whose stored `model` config is `cfg`.
pub(crate) fn write_component<M: Module, C: Serialize>(
    dir: &Path,
    kind: &str,
    model: &M,
    cfg: &C,
    step: u64,
) {
    save_checkpoint(dir, kind, model, serde_json::json!({ "model": cfg }), step);
}

/// Write `model` as a step-`step` checkpoint of `kind` storing the run config `config`, with a
/// fresh optimiser state.
fn save_checkpoint<M: Module>(dir: &Path, kind: &str, model: &M, config: serde_json::Value, step: u64) {
    let state = TrainState {
        step,
        model_kind: kind.into(),
        config,
        seed: 0,
        loader: None,
        val_loader: None,
        metrics_head: Vec::new(),
        extra: Default::default(),
    };
    save(dir, model, &OptimConfig::default().init().unwrap(), state).unwrap();
}

/// Tokenizer and LAM runs with random weights in `root/tok`, `root/lam`.
pub(crate) fn component_runs(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let device = Device::flex();
    let (tok, lam) = (root.join("tok"), root.join("lam"));
    write_component(&tok, TOKENIZER_KIND, &tiny_vq().init(&device).unwrap(), &tiny_tokenizer(), 5);
    let lam_cfg = crate::lam::tests::tiny();
    write_component(&lam, LAM_KIND, &lam_cfg.init(&device).unwrap(), &lam_cfg, 7);
    (tok, lam)
}

/// Save `model` as a step-`step` dynamics checkpoint in `dir` whose stored config is `cfg`
/// (with a fresh optimiser state).
pub(crate) fn save_dynamics_run<M: Module>(dir: &Path, model: &M, cfg: &GenieConfig, step: u64) {
    let run_cfg = crate::dynamics::task::GenieRunConfig {
        model: cfg.clone(),
        train: Default::default(),
        data: Default::default(),
    };
    save_checkpoint(dir, DYNAMICS_KIND, model, jinn_train::config::to_json(&run_cfg), step);
}

pub(crate) fn bits<M: Module>(model: &M) -> Vec<u32> {
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

#[test]
fn assembles_from_stored_configs_and_keeps_components_frozen() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam) = component_runs(root.path());
    let device = Device::flex().autodiff();
    let (genie, cfg) =
        assemble_genie(&tok, ActionSource::LamRun(&lam), &tiny_dynamics(DynamicsKind::MASKGIT), &device)
            .unwrap();
    assert_eq!(cfg.tokenizer, tiny_tokenizer());
    assert_eq!(cfg.actions, ActionConfig::Lam { lam: crate::lam::tests::tiny(), co_train: false });
    assert!(genie.lam.as_ref().unwrap().decoder.is_none());
    let (stored_tok, _) = load_tokenizer(&tok, &Device::flex()).unwrap();
    assert_eq!(bits(&genie.tokenizer), bits(&stored_tok));

    // One optimiser step with weight decay: only the dynamics move.
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], &device);
    let (tok_before, lam_before, dyn_before) =
        (bits(&genie.tokenizer), bits(&genie.lam), bits(&genie.dynamics));
    let out = genie.forward(x, None, &SampleStreams::new(0, "t", 0, 2)).unwrap();
    assert_eq!(out.logits.dims(), [2, 3, 16, 16]);
    assert!(out.loss_positions[..16].iter().all(|&m| !m), "frame 0 masked");
    let grads = GradientsParams::from_grads(out.loss.backward(), &genie);
    let mut optim = OptimConfig { weight_decay: 0.1, ..OptimConfig::default() }.init().unwrap();
    let genie = optim.step(1e-2, genie, grads);
    assert_eq!(bits(&genie.tokenizer), tok_before, "the frozen tokenizer changed");
    assert_eq!(bits(&genie.lam), lam_before, "the frozen LAM changed");
    assert_ne!(bits(&genie.dynamics), dyn_before, "the dynamics did not train");

    // Saved whole, it loads back from its own stored config.
    let run = root.path().join("dyn");
    save_dynamics_run(&run, &genie, &cfg, 3);
    let (loaded, loaded_cfg, step) = load_genie(&run, &Device::flex()).unwrap();
    assert_eq!((loaded_cfg, step), (cfg, 3));
    assert_eq!(bits(&loaded), bits(&genie));
}

#[test]
fn co_trained_lam_and_ground_truth_actions_get_gradients() {
    let root = tempfile::tempdir().unwrap();
    let (tok, _) = component_runs(root.path());
    let device = Device::flex().autodiff();
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], &device);
    let dynamics = tiny_dynamics(DynamicsKind::CAUSAL);
    let (genie, _) =
        assemble_genie(&tok, ActionSource::CoTrain(crate::lam::tests::tiny()), &dynamics, &device).unwrap();
    let out = genie.forward(x.clone(), None, &SampleStreams::new(0, "t", 0, 2)).unwrap();
    assert!(out.loss_positions.iter().all(|&p| p), "causal: every position counts");
    let grads = out.loss.backward();
    let lam = genie.lam.as_ref().unwrap();
    assert!(lam.encoder.proj_in.weight.val().grad(&grads).is_some(), "co-trained LAM gets no gradient");
    assert!(genie.tokenizer.encoder.proj_in.weight.val().grad(&grads).is_none());

    let (genie, cfg) =
        assemble_genie(&tok, ActionSource::GroundTruth { num_actions: 3 }, &dynamics, &device).unwrap();
    assert_eq!(cfg.actions, ActionConfig::Gt { num_actions: 3, action_dim: 4 });
    assert!(genie.forward(x.clone(), None, &SampleStreams::new(0, "t", 0, 2)).is_err(), "no actions");
    let acts = Tensor::<2, Int>::from_data(
        burn::tensor::TensorData::new(vec![0i64, 1, 2, 2, 1, 0], [2, 3]),
        &device,
    );
    let out = genie.forward(x.clone(), Some(acts), &SampleStreams::new(0, "t", 0, 2)).unwrap();
    let grads = out.loss.backward();
    assert!(genie.action_embed.as_ref().unwrap().val().grad(&grads).is_some());
    let bad = Tensor::<2, Int>::from_data(
        burn::tensor::TensorData::new(vec![0i64, 1, 3, 2, 1, 0], [2, 3]),
        &device,
    );
    let err = genie.forward(x, Some(bad), &SampleStreams::new(0, "t", 0, 2)).unwrap_err().to_string();
    assert!(err.contains("0..3"), "{err}");
}

/// `dynamics.lam_code_embedding`: the actions are the rows of a learned `[K, L]` table picked
/// by the frozen LAM's code indices; the table trains, the LAM does not; the table is what
/// random-action rollouts draw from; it survives save/load; a co-trained LAM is refused.
#[test]
fn lam_code_embedding_looks_up_the_codes_and_trains_only_the_table() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam_run) = component_runs(root.path());
    let device = Device::flex().autodiff();
    let dynamics = DynamicsConfig { lam_code_embedding: true, ..tiny_dynamics(DynamicsKind::MASKGIT) };
    let (genie, cfg) = assemble_genie(&tok, ActionSource::LamRun(&lam_run), &dynamics, &device).unwrap();
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], &device);

    let (latent, indices) = genie.latent_actions(x.clone(), None).unwrap();
    let lam = genie.lam.as_ref().unwrap();
    let want_ids = lam.action_indices(x.clone()).unwrap().reshape([4]);
    let indices = indices.unwrap();
    assert_eq!(indices.to_data(), want_ids.to_data());
    let table = genie.action_embed.as_ref().expect("a code table").val(); // [K, L]
    assert_eq!(table.dims(), [4, 8]);
    let ids: Vec<i64> = indices.try_into_vec_as::<i64>().unwrap();
    let rows: Vec<f32> = table.clone().try_into_vec_as::<f32>().unwrap();
    let want: Vec<f32> =
        ids.iter().flat_map(|&i| rows[i as usize * 8..(i as usize + 1) * 8].to_vec()).collect();
    assert_eq!(latent.dims(), [2, 2, 8]);
    assert_eq!(latent.try_into_vec_as::<f32>().unwrap(), want);
    assert_eq!(bits_of(genie.action_table()), bits_of(table));

    let (lam_before, table_before) = (bits(&genie.lam), bits(&genie.action_embed));
    let out = genie.forward(x, None, &SampleStreams::new(0, "t", 0, 2)).unwrap();
    let grads = GradientsParams::from_grads(out.loss.backward(), &genie);
    let genie = OptimConfig::default().init().unwrap().step(1e-2, genie, grads);
    assert_eq!(bits(&genie.lam), lam_before, "the frozen LAM changed");
    assert_ne!(bits(&genie.action_embed), table_before, "the code table did not train");

    // Stored in the dynamics config, it rebuilds the same modules on load.
    let run = root.path().join("dyn");
    save_dynamics_run(&run, &genie, &cfg, 1);
    let (loaded, _, _) = load_genie(&run, &Device::flex()).unwrap();
    assert_eq!(bits(&loaded.action_embed), bits(&genie.action_embed));

    let err = assemble_genie(&tok, ActionSource::CoTrain(crate::lam::tests::tiny()), &dynamics, &device)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("model.lam_code_embedding") && err.contains("--lam"), "{err}");
}

/// `previous_frame_own_share = 1`: the previous-frame input reads, at the masked positions,
/// the argmax of a first pass over the same masked clip; the loss still targets the true
/// tokens, and gradients reach the dynamics through the second pass only.
#[test]
fn own_previous_frames_read_the_first_pass_argmax_at_the_masked_positions() {
    let root = tempfile::tempdir().unwrap();
    let (tok, _) = component_runs(root.path());
    let device = Device::flex().autodiff();
    let mut dynamics = tiny_dynamics(DynamicsKind::MASKGIT);
    let settings = dynamics.maskgit_mut().unwrap();
    (settings.previous_frame_input, settings.mask_limit, settings.previous_frame_own_share) =
        (true, 0.0, 1.0);
    let source = ActionSource::GroundTruth { num_actions: 3 };
    let (genie, _) = assemble_genie(&tok, source, &dynamics, &device).unwrap();
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 4), [2, 4, 16, 16, 3], &device);
    let acts = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 2, 0, 2, 1, 0, 1], [2, 4]), &device);
    let streams = SampleStreams::new(3, "t", 0, 2);
    let out = genie.forward(x.clone(), Some(acts.clone()), &streams).unwrap();

    // The same by hand: mask, first pass, argmax at the masked positions, second pass.
    let (latent, _) = genie.latent_actions(x, Some(acts)).unwrap(); // [b, t−1, la]
    let dims = out.tokens.dims();
    let mask = maskgit::draw_mask(dims, 0.0, false, &streams).unwrap();
    let mask_t = maskgit::mask_tensor(&mask, dims, &device);
    let first = genie.dynamics.logits(out.tokens.clone(), latent.clone(), Some(mask_t.clone())).unwrap();
    let guess: Vec<i64> = first.clone().argmax(3).try_into_vec_as::<i64>().unwrap();
    let truth: Vec<i64> = out.tokens.clone().try_into_vec_as::<i64>().unwrap();
    let read: Vec<i64> =
        truth.iter().zip(&guess).zip(&mask).map(|((&t, &g), &m)| if m { g } else { t }).collect();
    assert!(read != truth, "the untrained model's guesses should differ from the truth somewhere");
    let read = Tensor::<3, Int>::from_data(TensorData::new(read, dims), &device);
    let want = genie
        .dynamics
        .logits_reading(out.tokens.clone(), read, latent, Some(mask_t), &mut |h| genie.dynamics.backbone(h));
    let (got, want) = (bits_of4(out.logits.clone()), bits_of4(want.unwrap()));
    assert_eq!(got, want, "the training logits are not the second pass over the own tokens");
    assert_ne!(got, bits_of4(first), "the previous-frame input read the truth");
    let grads = out.loss.backward();
    assert!(genie.dynamics.previous_embed.as_ref().unwrap().val().grad(&grads).is_some());
}

fn bits_of4(t: Tensor<4>) -> Vec<u32> {
    t.try_into_vec_as::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
}

/// Grounded codes: a transition whose recorded action has a leading code trains with it
/// when its own code stands for another action; the rows come from the code table, or from
/// the LAM's codebook without one. A code that stands for no action stays.
#[test]
fn grounded_actions_take_the_leading_code_of_their_recorded_action() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam_run) = component_runs(root.path());
    let device = Device::flex();
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], &device);
    // Action 0 is led by code 3, action 1 by code 1, action 2 by none; every code stands for
    // an action (codes 0 and 2 for action 2).
    let grounding = CodeGrounding {
        code_for_action: vec![Some(3), Some(1), None],
        action_of_code: vec![Some(2), Some(1), Some(2), Some(0)],
    };
    let unclear = CodeGrounding { action_of_code: vec![None; 4], ..grounding.clone() };
    let recorded = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 2, 0, 1, 0, 2], [2, 3]), &device);
    for embedding in [true, false] {
        let dynamics =
            DynamicsConfig { lam_code_embedding: embedding, ..tiny_dynamics(DynamicsKind::MASKGIT) };
        let (genie, _) = assemble_genie(&tok, ActionSource::LamRun(&lam_run), &dynamics, &device).unwrap();
        let (_, own) = genie.latent_actions(x.clone(), None).unwrap();
        let own: Vec<i64> = own.unwrap().try_into_vec_as::<i64>().unwrap(); // [b·(t−1)]
        let (latent, ids) = infer_actions(
            genie.lam.as_ref(),
            genie.action_embed.as_ref(),
            Some(&grounding),
            x.clone(),
            Some(recorded.clone()),
        )
        .unwrap();
        let ids: Vec<i64> = ids.unwrap().try_into_vec_as::<i64>().unwrap();
        // Transitions (clip, frame): (0, 0) action 0 → 3; (0, 1) action 2 → own;
        // (1, 0) action 1 → 1; (1, 1) action 0 → 3.
        assert_eq!(ids, [3, own[1], 1, 3], "embedding {embedding}");
        let table = match &genie.action_embed {
            Some(t) => t.val(),
            None => genie.lam.as_ref().unwrap().vq.codebook.val(),
        };
        let l = table.dims()[1];
        let rows: Vec<f32> = table.try_into_vec_as::<f32>().unwrap();
        let want: Vec<f32> =
            ids.iter().flat_map(|&i| rows[i as usize * l..(i as usize + 1) * l].to_vec()).collect();
        assert_eq!(latent.try_into_vec_as::<f32>().unwrap(), want, "embedding {embedding}");
        // Codes that stand for no action are what the LAM read off the frames: none moves.
        let (_, kept) =
            infer_actions(genie.lam.as_ref(), None, Some(&unclear), x.clone(), Some(recorded.clone()))
                .unwrap();
        assert_eq!(kept.unwrap().try_into_vec_as::<i64>().unwrap(), own, "embedding {embedding}");
        // The training forward reports the grounded codes; without recorded actions nothing
        // is grounded.
        let out = genie
            .forward_grounded(
                x.clone(),
                Some(recorded.clone()),
                Some(&grounding),
                &SampleStreams::new(0, "t", 0, 2),
            )
            .unwrap();
        assert_eq!(out.lam_indices.unwrap().try_into_vec_as::<i64>().unwrap(), ids);
        let out = genie
            .forward_grounded(x.clone(), None, Some(&grounding), &SampleStreams::new(0, "t", 0, 2))
            .unwrap();
        assert_eq!(out.lam_indices.unwrap().try_into_vec_as::<i64>().unwrap(), own);
    }
}

fn bits_of(t: Tensor<2>) -> Vec<u32> {
    t.try_into_vec_as::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn wrong_kind_wrong_shape_corrupt_and_empty_runs_are_clear_errors() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam) = component_runs(root.path());
    let device = Device::flex();
    let d = tiny_dynamics(DynamicsKind::MASKGIT);

    // A LAM run given as the tokenizer.
    let err = assemble_genie(&lam, ActionSource::LamRun(&lam), &d, &device).unwrap_err().to_string();
    assert!(err.contains("holds a `lam` model, expected `tokenizer`"), "{err}");

    // Weights of another shape than the stored config says.
    let wrong = root.path().join("wrong");
    let mut bigger = tiny_vq();
    bigger.coder.model_dim = 32;
    write_component(&wrong, TOKENIZER_KIND, &bigger.init(&device).unwrap(), &tiny_tokenizer(), 1);
    let err = assemble_genie(&wrong, ActionSource::LamRun(&lam), &d, &device).unwrap_err().to_string();
    assert!(err.contains("ShapeMismatch") && err.contains("wrong/step_000001"), "{err}");

    // A corrupted newest checkpoint is skipped for an older good one; with none left, the
    // error names the run and the reason.
    let file = tok.join(jinn_train::checkpoint::step_dir_name(5)).join(jinn_train::checkpoint::MODEL_FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let err = assemble_genie(&tok, ActionSource::LamRun(&lam), &d, &device).unwrap_err().to_string();
    assert!(err.contains("no usable `tokenizer` checkpoint") && err.contains("CRC32C"), "{err}");

    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = assemble_genie(&empty, ActionSource::LamRun(&lam), &d, &device).unwrap_err().to_string();
    assert!(err.contains("no usable `tokenizer` checkpoint"), "{err}");

    // A LAM for other frames than the tokenizer's.
    let (tok2, _) = component_runs(&root.path().join("again"));
    let lam_other = root.path().join("lam_other");
    let mut cfg = crate::lam::tests::tiny();
    cfg.coder.height = 8;
    write_component(&lam_other, LAM_KIND, &cfg.init(&device).unwrap(), &cfg, 1);
    let err = assemble_genie(&tok2, ActionSource::LamRun(&lam_other), &d, &device).unwrap_err().to_string();
    assert!(err.contains("8×16×3") && err.contains("16×16×3"), "{err}");
}
