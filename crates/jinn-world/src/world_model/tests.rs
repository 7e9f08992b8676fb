use super::*;
use crate::diffusion::genie::tests::mae_run;
use crate::genie::tests::{component_runs, save_dynamics_run, tiny_dynamics};
use crate::genie::{assemble_genie, ActionSource};
use crate::{assemble_diffusion_genie, frames_to_unit};

#[test]
fn load_world_picks_the_family_and_rollouts_decode_frames() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam) = component_runs(root.path());
    let mae = mae_run(root.path());
    let device = Device::flex();
    let (g, g_cfg) =
        assemble_genie(&tok, ActionSource::LamRun(&lam), &tiny_dynamics(DynamicsKind::CAUSAL), &device)
            .unwrap();
    let (d, d_cfg) = assemble_diffusion_genie(
        &mae,
        ActionSource::LamRun(&lam),
        &crate::diffusion::tests::tiny_diffusion(3),
        &device,
    )
    .unwrap();
    save_dynamics_run(&root.path().join("tokens"), &g, &g_cfg, 1);
    save_dynamics_run(&root.path().join("diffusion"), &d, &d_cfg, 1);
    let (tokens, _, _) = load_world(&root.path().join("tokens"), &device).unwrap();
    let (diffusion, _, _) = load_world(&root.path().join("diffusion"), &device).unwrap();
    assert_eq!(tokens.kind(), DynamicsKind::CAUSAL);
    assert_eq!(diffusion.kind(), DynamicsKind::DIFFUSION);

    let videos = frames_to_unit(&crate::lam::tests::moving_square(1, 3), [1, 3, 16, 16, 3], &device);
    for world in [tokens.as_ref(), diffusion.as_ref()] {
        let (actions, ids) = world.latent_actions(videos.clone(), None, None).unwrap();
        assert!(world.has_lam() && ids.is_some());
        let encoded = world.encode(videos.clone(), None).unwrap();
        let cfg = SamplerConfig { maskgit_steps: 2, ..SamplerConfig::default() };
        let frames = world.rollout(encoded.first_frames(1), actions, 3, &cfg).unwrap();
        assert_eq!(frames.dims(), [1, 3, 16, 16, 3]);
    }
    // Past the window, frame t encodes and decodes from the window of frames ending at it.
    let a = videos.clone().narrow(1, 1, 2); // frames 1..3
    for world in [tokens.as_ref(), diffusion.as_ref()] {
        let whole = world.encode(videos.clone(), Some(2)).unwrap();
        let last_of_window = world.encode(a.clone(), None).unwrap();
        let decoded = world.decode(whole.clone(), Some(2)).unwrap(); // [1, 3, 16, 16, 3]
        let tail = match &whole {
            Encoded::Tokens(w) => Encoded::Tokens(w.clone().narrow(1, 1, 2)),
            Encoded::Latents(l) => Encoded::Latents(l.clone().narrow(1, 1, 2)),
        }; // frames 1..3
        let window_decoded = world.decode(tail, None).unwrap(); // [1, 2, 16, 16, 3]
        let frame = |x: Tensor<5>, t: usize| x.narrow(1, t, 1).try_into_vec_as::<f32>().unwrap();
        assert_eq!(frame(decoded.clone(), 2), frame(window_decoded, 1));
        assert_ne!(frame(decoded, 2), frame(world.decode(whole.clone(), None).unwrap(), 2));
        match (whole, last_of_window) {
            (Encoded::Tokens(w), Encoded::Tokens(l)) => assert_eq!(
                w.narrow(1, 2, 1).try_into_vec_as::<i64>().unwrap(),
                l.narrow(1, 1, 1).try_into_vec_as::<i64>().unwrap()
            ),
            (Encoded::Latents(w), Encoded::Latents(l)) => assert_eq!(frame4(w, 2), frame4(l, 1)),
            _ => panic!("one family per model"),
        }
    }

    // Encoded frames of the other family are refused.
    let latents = diffusion.encode(videos.clone(), None).unwrap();
    let (actions, _) = tokens.latent_actions(videos, None, None).unwrap();
    let err = tokens.rollout(latents, actions, 3, &SamplerConfig::default()).unwrap_err().to_string();
    assert!(err.contains("other model family"), "{err}");
}

/// Frame `t` of latents `[B, T, N, L]`, flattened.
fn frame4(x: Tensor<4>, t: usize) -> Vec<f32> {
    x.narrow(1, t, 1).try_into_vec_as::<f32>().unwrap()
}
