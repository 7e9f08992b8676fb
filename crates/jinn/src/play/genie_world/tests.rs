//! A play step conditions the dynamics exactly as the offline sampler (`jinn sample`) does:
//! the same context tokens, the LAM's codes for the transitions between start frames, and the
//! action table the dynamics was trained with (the learned code embeddings of a
//! `lam_code_embedding` model, not the LAM's codebook).

use super::*;
use jinn_world::{ActionConfig, DynamicsConfig, GenieConfig, LamConfig, TokenizerConfig};
use rand::Rng;

/// A tiny random Genie drawn from `seed`: 16×16 frames, patch 4, width 16, one block per stack,
/// a LAM of 4 codes whose indices the dynamics embeds.
fn tiny_genie(seed: u64) -> Genie {
    let shared = serde_json::json!({
        "height": 16, "width": 16, "patch": 4, "model_dim": 16, "ffn_dim": 32, "num_heads": 2,
        "encoder_blocks": 1, "decoder_blocks": 1, "latent_dim": 8,
    });
    let with = |extra: serde_json::Value| {
        let mut v = shared.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    let tokenizer: TokenizerConfig =
        serde_json::from_value(with(serde_json::json!({"num_codes": 16}))).unwrap();
    let lam: LamConfig = serde_json::from_value(with(serde_json::json!({"num_codes": 4}))).unwrap();
    let dynamics: DynamicsConfig = serde_json::from_value(serde_json::json!({
        "kind": "maskgit", "model_dim": 16, "ffn_dim": 32, "num_heads": 2, "num_blocks": 1,
        "lam_code_embedding": true,
    }))
    .unwrap();
    let cfg = GenieConfig { tokenizer, actions: ActionConfig::Lam { lam, co_train: false }, dynamics };
    let device = Device::flex();
    let genie = jinn_nn::init::seeded_init(&device, seed, || cfg.init(&device)).unwrap();
    // Large code embeddings, so that the (random) dynamics' output depends on the action.
    let table = genie.action_embed.as_ref().unwrap().val().mul_scalar(50.0);
    Genie { action_embed: Some(burn::module::Param::from_tensor(table)), ..genie }
}

fn random_frames(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = jinn_data::rng::rng_for(seed, "play-test-frames", 0);
    (0..n * 16 * 16 * 3).map(|_| rng.random::<u8>()).collect() // [n, 16, 16, 3]
}

/// The frame `jinn sample` would generate after `frames` under the action vectors `table`
/// rows `ids` (one per transition), seeded like the first play step.
fn offline_frame(
    genie: &Genie,
    frames: &[u8],
    table: Tensor<2>,
    ids: &[i64],
    sampler: &SamplerConfig,
) -> Vec<u8> {
    let device = Device::flex();
    let t = frames.len() / (16 * 16 * 3);
    let video = frames_to_unit(frames, [1, t, 16, 16, 3], &device);
    let tokens = genie.tokenizer.encode(video).unwrap(); // [1, t, n]
    let sel = Tensor::<1, Int>::from_data(TensorData::new(ids.to_vec(), [ids.len()]), &device);
    let la = table.dims()[1];
    let actions = table.select(0, sel).reshape([1, ids.len(), la]); // [1, t, la]
    let rollout = sample(&genie.dynamics, tokens, actions, t + 1, sampler).unwrap();
    let video = genie.tokenizer.decode(rollout.token_tensor(&device)).unwrap(); // [1, t + 1, h, w, c]
    frames_to_u8(video)[t * 16 * 16 * 3..].to_vec()
}

#[test]
fn a_step_conditions_the_dynamics_as_the_offline_sampler_does() {
    let mut told_apart = 0;
    for seed in 0..8 {
        let genie = tiny_genie(seed);
        let sampler = SamplerConfig { maskgit_steps: 3, argmax: true, seed: 5, ..SamplerConfig::default() };
        let world = GenieWorld::new(genie.clone(), "tiny".into(), 4, None, sampler.clone(), Some(3)).unwrap();
        assert_eq!(world.info().max_start_frames, 2);
        let shape = world.info().frame;
        let pixels = random_frames(2, seed);
        let frames: Vec<Frame> = pixels
            .chunks_exact(shape.frame_bytes())
            .map(|f| Frame::new(shape, f.to_vec()).unwrap())
            .collect();

        let mut state = world.start(&frames).unwrap();
        let played = world.step(&mut state, 2).unwrap();

        // The transition between the two start frames takes the LAM's code, the step's action
        // picks its row of the code embeddings.
        let video = frames_to_unit(&pixels, [1, 2, 16, 16, 3], &Device::flex());
        let (_, codes) = genie.latent_actions(video, None).unwrap();
        let code = codes.unwrap().try_into_vec_as::<i64>().unwrap()[0];
        let embedded = offline_frame(&genie, &pixels, genie.action_table(), &[code, 2], &sampler);
        assert_eq!(played.pixels, embedded, "seed {seed}: play must condition on the dynamics' own table");

        // The LAM's codebook is another table: a play path that used it would generate other
        // frames (what made the demo's keys do nothing).
        let codebook = genie.lam.as_ref().unwrap().vq.codebook.val();
        told_apart += usize::from(offline_frame(&genie, &pixels, codebook, &[code, 2], &sampler) != embedded);
    }
    assert!(told_apart > 0, "the random models must be able to tell the two tables apart");
}

#[test]
fn without_data_the_codes_keep_neutral_labels_and_a_bad_window_is_named() {
    let genie = tiny_genie(0);
    let world =
        GenieWorld::new(genie.clone(), "tiny".into(), 4, None, SamplerConfig::default(), None).unwrap();
    let labels: Vec<&str> = world.info().actions.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(labels, ["latent 0", "latent 1", "latent 2", "latent 3"]);
    let err =
        GenieWorld::new(genie, "tiny".into(), 4, None, SamplerConfig::default(), Some(5)).err().unwrap();
    assert!(err.to_string().contains("--window 5: expected 2..=4"), "{err}");
}

#[test]
fn reconstructions_and_codes_of_a_long_clip_see_the_windows_ending_at_each_frame() {
    let genie = tiny_genie(1);
    let world =
        GenieWorld::new(genie.clone(), "tiny".into(), 4, None, SamplerConfig::default(), Some(3)).unwrap();
    let shape = world.info().frame;
    let fb = shape.frame_bytes();
    let pixels = random_frames(6, 3); // [6, 16, 16, 3]
    let device = Device::flex();
    let clip = |from: usize, to: usize| {
        frames_to_unit(&pixels[from * fb..to * fb], [1, to - from, 16, 16, 3], &device)
    };

    // Naive loops: frame t's tokens from the encoder on the play window (3) ending at it, its
    // pixels from the decoder on the window of those tokens ending at it.
    let tokens: Vec<Tensor<3, Int>> = (0..6usize)
        .map(|t| {
            let from = (t + 1).saturating_sub(3);
            let tokens = genie.tokenizer.encode(clip(from, t + 1)).unwrap(); // [1, t + 1 − from, n]
            tokens.narrow(1, t - from, 1)
        })
        .collect();
    let recon = world.reconstruct(&pixels, shape).unwrap();
    assert_eq!(recon.len(), 6);
    for (t, frame) in recon.iter().enumerate() {
        let from = (t + 1).saturating_sub(3);
        let decoded = genie.tokenizer.decode(Tensor::cat(tokens[from..=t].to_vec(), 1)).unwrap();
        let want = frames_to_u8(decoded); // [t + 1 − from, 16, 16, 3]
        assert_eq!(frame, &want[want.len() - fb..].to_vec(), "frame {t}");
    }
    let whole = frames_to_u8(genie.tokenizer.decode(genie.tokenizer.encode(clip(0, 6)).unwrap()).unwrap());
    assert_ne!(recon[5], whole[5 * fb..].to_vec(), "the whole clip at once is not what play decodes");

    // Codes: transition t → t + 1 from the LAM on the training-length window (4) ending at t + 1.
    let codes = world.latent_codes(&pixels, shape).unwrap().unwrap();
    assert_eq!(codes.len(), 5);
    for (t, &code) in codes.iter().enumerate() {
        let from = (t + 2).saturating_sub(4);
        let (_, ids) = genie.latent_actions(clip(from, t + 2), None).unwrap();
        let ids = ids.unwrap().try_into_vec_as::<i64>().unwrap();
        assert_eq!(code as i64, *ids.last().unwrap(), "transition {t}");
    }
}
