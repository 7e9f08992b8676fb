use super::*;
use crate::diffusion::tests::tiny_diffusion;
use crate::dynamics::DynamicsKind;
use crate::genie::tests::{bits, component_runs, save_dynamics_run, tiny_dynamics, write_component};
use crate::genie::{assemble_genie, load_genie};
use crate::mae::MaeConfig;
use crate::tokenizer::TokenizerConfig;
use crate::tokenizer::TOKENIZER_KIND;
use burn::optim::GradientsParams;
use jinn_train::optim::OptimConfig;

/// The tiny MAE tokenizer config of the component runs (16×16 frames, latent 8).
pub(crate) fn tiny_mae_tokenizer() -> TokenizerConfig {
    let coder = crate::tokenizer::tests::tiny_coder();
    TokenizerConfig::Mae(MaeConfig { coder, ..crate::mae::tests::tiny_mae() })
}

/// An MAE tokenizer run with random weights in `root/mae`.
pub(crate) fn mae_run(root: &Path) -> std::path::PathBuf {
    let dir = root.join("mae");
    let cfg = tiny_mae_tokenizer();
    write_component(&dir, TOKENIZER_KIND, &cfg.mae().unwrap().init(&Device::flex()).unwrap(), &cfg, 4);
    dir
}

#[test]
fn assembles_trains_only_the_dynamics_and_loads_back() {
    let root = tempfile::tempdir().unwrap();
    let mae = mae_run(root.path());
    let (_, lam) = component_runs(root.path());
    let device = Device::flex().autodiff();
    let (genie, cfg) =
        assemble_diffusion_genie(&mae, ActionSource::LamRun(&lam), &tiny_diffusion(4), &device).unwrap();
    assert_eq!(cfg.tokenizer, tiny_mae_tokenizer());
    assert_eq!(cfg.dynamics.diffusion().unwrap().denoise_steps, 4);
    let x = crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], &device);
    let before = (bits(&genie.tokenizer), bits(&genie.lam), bits(&genie.dynamics));
    let out = genie.forward(x, None, &SampleStreams::new(0, "t", 0, 2)).unwrap();
    assert_eq!(out.out.pred.dims(), [2, 3, 16, 8]);
    let grads = GradientsParams::from_grads(out.out.loss.backward(), &genie);
    let mut optim = OptimConfig { weight_decay: 0.1, ..OptimConfig::default() }.init().unwrap();
    let genie = optim.step(1e-2, genie, grads);
    assert_eq!(bits(&genie.tokenizer), before.0, "the frozen MAE tokenizer changed");
    assert_eq!(bits(&genie.lam), before.1, "the frozen LAM changed");
    assert_ne!(bits(&genie.dynamics), before.2, "the dynamics did not train");

    let run = root.path().join("dyn");
    save_dynamics_run(&run, &genie, &cfg, 2);
    let (loaded, loaded_cfg, step) = load_diffusion_genie(&run, &Device::flex()).unwrap();
    assert_eq!((loaded_cfg, step), (cfg, 2));
    assert_eq!(bits(&loaded), bits(&genie));
    // The token-dynamics loader refuses it with a clear message.
    let err = load_genie(&run, &Device::flex()).unwrap_err().to_string();
    assert!(err.contains("diffusion"), "{err}");
}

#[test]
fn wrong_tokenizer_kind_and_wrong_dynamics_kind_are_clear_errors() {
    let root = tempfile::tempdir().unwrap();
    let mae = mae_run(root.path());
    let (vq, lam) = component_runs(root.path());
    let device = Device::flex();
    // Diffusion dynamics on a VQ tokenizer run.
    let err = assemble_diffusion_genie(&vq, ActionSource::LamRun(&lam), &tiny_diffusion(4), &device)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`vq` tokenizer") && err.contains("--kind mae"), "{err}");
    // MaskGIT dynamics on an MAE tokenizer run.
    let err =
        assemble_genie(&mae, ActionSource::LamRun(&lam), &tiny_dynamics(DynamicsKind::MASKGIT), &device)
            .unwrap_err()
            .to_string();
    assert!(err.contains("`mae` tokenizer") && err.contains("--kind vq"), "{err}");
    // A MaskGIT config given to the diffusion assembly, and the reverse.
    let err = assemble_diffusion_genie(
        &mae,
        ActionSource::LamRun(&lam),
        &tiny_dynamics(DynamicsKind::MASKGIT),
        &device,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("diffusion"), "{err}");
    let err =
        assemble_genie(&vq, ActionSource::LamRun(&lam), &tiny_diffusion(4), &device).unwrap_err().to_string();
    assert!(
        err.contains("holds diffusion dynamics") && err.contains("MaskGIT or causal dynamics only"),
        "{err}"
    );
}
