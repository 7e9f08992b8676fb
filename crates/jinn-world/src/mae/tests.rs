use super::*;
use crate::tokenizer::frames_to_unit;
use crate::tokenizer::tests::tiny_coder;
use crate::tokenizer::{CoderConfig, TokenizerConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution};
use jinn_data::rng::SampleStreams;
use jinn_train::optim::OptimConfig;

/// 16×16×3 frames, patch 4 (N = 16, P = 48), width 32, latent 8.
pub(crate) fn tiny_mae() -> MaeConfig {
    MaeConfig {
        coder: CoderConfig { model_dim: 32, ffn_dim: 64, num_heads: 4, ..tiny_coder() },
        ..MaeConfig::default()
    }
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

#[test]
fn mask_ratios_are_uniform_below_the_bound_and_patches_follow_them() {
    let (b, t, n) = (50, 40, 200);
    let (mask, ratios) = draw_patch_mask([b, t, n], 0.9, &SampleStreams::new(1, "test", 0, b)).unwrap();
    assert_eq!((mask.len(), ratios.len()), (b * t * n, b * t));
    // U[0, 0.9): mean 0.45, variance 0.81/12, all in range.
    let k = ratios.len() as f64;
    let mean = ratios.iter().sum::<f64>() / k;
    let var = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / k;
    assert!(ratios.iter().all(|&r| (0.0..0.9).contains(&r)));
    assert!((mean - 0.45).abs() < 0.02, "mean ratio {mean}");
    assert!((var - 0.81 / 12.0).abs() < 0.01, "ratio variance {var}");
    // Ratios spread over the whole interval (not one draw per clip).
    assert!(ratios.iter().any(|&r| r < 0.1) && ratios.iter().any(|&r| r > 0.8));
    // Each frame's masked fraction tracks its own ratio (binomial, n = 200: sd ≤ 0.036).
    for (frame, &r) in mask.chunks(n).zip(&ratios) {
        let frac = frame.iter().filter(|&&m| m).count() as f64 / n as f64;
        assert!((frac - r).abs() < 0.15, "masked fraction {frac} for ratio {r}");
    }
    let overall = mask.iter().filter(|&&m| m).count() as f64 / mask.len() as f64;
    assert!((overall - 0.45).abs() < 0.02, "overall masked fraction {overall}");
    // Ratio bound 0: nothing masked.
    let (none, _) = draw_patch_mask([2, 3, 16], 0.0, &SampleStreams::new(1, "test", 0, 2)).unwrap();
    assert!(none.iter().all(|&m| !m));
}

#[test]
fn shapes_bounds_and_masking_replace_patches() {
    let device = Device::flex();
    let model = tiny_mae().init(&device).unwrap();
    let x = Tensor::<5>::random([2, 3, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let z = model.encode(x.clone()).unwrap();
    assert_eq!(z.dims(), [2, 3, 16, 8]);
    assert!(floats(z.clone()).iter().all(|v| v.abs() <= 1.0), "tanh bounds the latents");
    let recon = model.decode(z).unwrap();
    assert_eq!(recon.dims(), [2, 3, 16, 16, 3]);
    assert!(floats(recon).iter().all(|v| (0.0..=1.0).contains(v)));
    // Every patch masked: the latents no longer depend on the frames.
    let all = vec![true; 2 * 3 * 16];
    let y = Tensor::<5>::random([2, 3, 16, 16, 3], Distribution::Uniform(0.0, 1.0), &device);
    let zx = floats(model.encode_masked(x.clone(), Some(&all)).unwrap());
    let zy = floats(model.encode_masked(y, Some(&all)).unwrap());
    assert!(zx.iter().zip(&zy).all(|(a, b)| (a - b).abs() < 1e-6));
    // An empty mask is the unmasked encoding; a wrong-sized one is an error.
    let none = vec![false; 2 * 3 * 16];
    let a = floats(model.encode_masked(x.clone(), Some(&none)).unwrap());
    let b = floats(model.encode(x.clone()).unwrap());
    assert_eq!(a, b);
    assert!(model.encode_masked(x, Some(&none[1..])).is_err());
    // Wrong frame size and wrong latent shape are errors naming what was expected.
    let bad = Tensor::<5>::zeros([1, 1, 8, 16, 3], &device);
    assert!(model.encode(bad).unwrap_err().to_string().contains("16×16×3"));
    assert!(model.decode(Tensor::zeros([1, 1, 16, 7], &device)).is_err());
}

#[test]
fn kinds_are_checked_and_parameter_count_matches_jasmine() {
    let device = Device::flex();
    let vq = TokenizerConfig::default();
    let err = vq.mae().unwrap_err().to_string();
    assert!(err.contains("`vq`") && err.contains("`mae`"), "{err}");
    assert!(TokenizerConfig::Mae(tiny_mae())
        .vq()
        .unwrap_err()
        .to_string()
        .contains("`mae` tokenizer config"));
    let bad = MaeConfig { max_mask_ratio: 1.0, ..tiny_mae() };
    assert!(bad.init(&device).unwrap_err().to_string().contains("max_mask_ratio"));
    // Jasmine's TokenizerMAE at its defaults: 34,457,696 parameters.
    assert_eq!(MaeConfig::default().init(&device).unwrap().num_params(), 34_457_696);
}

/// `[model]` of a tokenizer run config from TOML, as `jinn train tokenizer --config` reads it.
fn parse_model(toml: &str) -> Result<TokenizerConfig, String> {
    let text = format!("[model]\n{toml}");
    jinn_train::config::from_str::<crate::TokenizerRunConfig>(&text, "test.toml", &[])
        .map(|c| c.model)
        .map_err(|e| e.to_string())
}

#[test]
fn a_field_of_the_other_kind_is_refused_by_name() {
    let mae = parse_model("kind = \"mae\"\nlatent_dim = 8\nmax_mask_ratio = 0.5").unwrap();
    let want =
        MaeConfig { coder: CoderConfig { latent_dim: 8, ..CoderConfig::default() }, max_mask_ratio: 0.5 };
    assert_eq!(mae, TokenizerConfig::Mae(want));
    for (field, value) in
        [("num_codes", "64"), ("codebook_dropout", "0.0"), ("reset_threshold", "5"), ("remat", "true")]
    {
        let err = parse_model(&format!("kind = \"mae\"\n{field} = {value}")).unwrap_err();
        assert!(err.contains(field) && err.contains("`mae` tokenizer does not use it"), "{err}");
    }
    let err = parse_model("kind = \"vq\"\nmax_mask_ratio = 0.5").unwrap_err();
    assert!(err.contains("max_mask_ratio") && err.contains("`vq` tokenizer does not use it"), "{err}");
    let err = parse_model("kind = \"mae\"\nnum_code = 4").unwrap_err();
    assert!(err.contains("unknown field `num_code`") && err.contains("max_mask_ratio"), "{err}");
    // `--set model.kind=mae` over the (VQ) defaults gives the MAE defaults.
    let sets = ["model.kind=mae".to_string()];
    let cfg: crate::TokenizerRunConfig = jinn_train::config::from_str("", "test.toml", &sets).unwrap();
    assert_eq!(cfg.model, TokenizerConfig::Mae(MaeConfig::default()));
}

/// A checkpoint's stored `model` section as written while one struct carried both kinds: every
/// field, the other kind's at their defaults.
#[test]
fn configs_stored_with_every_field_still_load() {
    let shared = serde_json::json!({
        "height": 16, "width": 16, "channels": 3, "patch": 4, "model_dim": 32, "ffn_dim": 64,
        "num_heads": 4, "encoder_blocks": 1, "decoder_blocks": 1, "latent_dim": 8,
        "num_codes": 1024, "codebook_dropout": 0.01, "vq_beta": 0.25, "reset_threshold": 0,
        "remat": false, "max_mask_ratio": 0.9,
    });
    let with_kind = |kind: &str| {
        let mut v = shared.clone();
        v["kind"] = kind.into();
        v
    };
    let mae: TokenizerConfig = serde_json::from_value(with_kind("mae")).unwrap();
    assert_eq!(mae, TokenizerConfig::Mae(tiny_mae()));
    let vq: TokenizerConfig = serde_json::from_value(with_kind("vq")).unwrap();
    assert_eq!(vq.vq().unwrap().coder, tiny_mae().coder);
    assert_eq!(vq.vq().unwrap().num_codes, 1024);
    // Written back, each holds only its own fields (and reads back equal).
    let back = jinn_train::config::to_json(&mae);
    assert!(back.get("num_codes").is_none() && back["kind"] == "mae", "{back}");
    assert_eq!(serde_json::from_value::<TokenizerConfig>(back).unwrap(), mae);
    assert!(jinn_train::config::to_json(&vq).get("max_mask_ratio").is_none());
}

/// Clips whose 4×4 patches are solid colours moving one patch per frame.
fn patch_clips(b: usize, t: usize) -> Vec<u8> {
    let colours = [[250u8, 20, 20], [20, 250, 20], [20, 20, 250], [200, 200, 40], [10, 10, 10]];
    let mut v = Vec::with_capacity(b * t * 16 * 16 * 3);
    for bi in 0..b {
        for ti in 0..t {
            for y in 0..16 {
                for x in 0..16 {
                    let k = ((y / 4) * 3 + x / 4 + ti + 2 * bi) % colours.len();
                    v.extend_from_slice(&colours[k]);
                }
            }
        }
    }
    v
}

#[test]
fn loss_falls_on_a_small_batch() {
    let device = Device::flex().autodiff();
    device.seed(7);
    let mut model = tiny_mae().init(&device).unwrap();
    let mut optim = OptimConfig::default().init().unwrap();
    let clips = patch_clips(2, 3);
    let x = frames_to_unit(&clips, [2, 3, 16, 16, 3], &device);
    let eval = |m: &MaeTokenizer| {
        let m = m.valid();
        let x = frames_to_unit(&clips, [2, 3, 16, 16, 3], &m.mask_patch.val().device());
        m.forward_eval(x).unwrap().loss.into_scalar::<f32>()
    };
    let first = eval(&model);
    for step in 0..60 {
        let out = model.forward_train(x.clone(), &SampleStreams::new(0, "test", step, 2)).unwrap();
        let grads = GradientsParams::from_grads(out.loss.backward(), &model);
        model = optim.step(3e-3, model, grads);
    }
    let last = eval(&model);
    eprintln!("mae: unmasked loss {first} → {last}");
    assert!(last * 4.0 <= first, "loss {first} → {last}: less than a 4× drop");
}

/// A clip's mask depends on its own stream only: the batch's second half drawn as a batch of
/// its own (as another rank would) gives the same mask and ratios.
#[test]
fn a_clips_mask_is_keyed_by_its_global_index() {
    let (b, t, n) = (4, 3, 16);
    let (mask, ratios) = draw_patch_mask([b, t, n], 0.9, &SampleStreams::new(2, "mae", 10, b)).unwrap();
    let (half, half_ratios) = draw_patch_mask([2, t, n], 0.9, &SampleStreams::new(2, "mae", 12, 2)).unwrap();
    assert_eq!(half, mask[2 * t * n..]);
    assert_eq!(half_ratios, ratios[2 * t..]);
    assert!(draw_patch_mask([b, t, n], 0.9, &SampleStreams::new(2, "mae", 0, 3)).is_err());
}
