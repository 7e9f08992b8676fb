use super::*;
use crate::{DiffusionConfig, DynamicsConfig, MaskGitConfig, TokenDynamicsConfig};

#[test]
fn every_kind_constant_names_one_registry_row() {
    let names: Vec<&str> = DynamicsKind::all().map(DynamicsKind::name).collect();
    assert_eq!(names, ["maskgit", "causal", "diffusion"]);
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL, DynamicsKind::DIFFUSION] {
        assert_eq!(kind.entry().kind, kind);
        assert_eq!(DYNAMICS_KINDS.iter().filter(|e| e.kind == kind).count(), 1, "{kind}");
    }
    assert_eq!(DynamicsKind::default(), DynamicsKind::MASKGIT);
    assert_eq!(DynamicsKind::DIFFUSION.entry().tokenizer, TokenizerKind::Mae);
    assert_eq!(DynamicsKind::CAUSAL.entry().tokenizer, TokenizerKind::Vq);
}

#[test]
fn kinds_read_and_write_by_name() {
    for kind in DynamicsKind::all() {
        assert_eq!(kind.to_string().parse::<DynamicsKind>().unwrap(), kind);
        let json = serde_json::to_value(kind).unwrap();
        assert_eq!(json, Value::String(kind.name().into()));
        assert_eq!(serde_json::from_value::<DynamicsKind>(json).unwrap(), kind);
    }
    let err = "flow".parse::<DynamicsKind>().unwrap_err();
    assert!(err.contains("`flow`") && err.contains("`maskgit`, `causal` or `diffusion`"), "{err}");
    let err = serde_json::from_value::<DynamicsKind>(Value::String("MaskGit".into())).unwrap_err();
    assert!(err.to_string().contains("unknown dynamics kind `MaskGit`"), "{err}");
}

#[test]
fn a_kind_config_holds_its_own_settings_type() {
    let maskgit = KindConfig::default_for(DynamicsKind::MASKGIT);
    assert_eq!(maskgit.get::<MaskGitConfig>(), Some(&MaskGitConfig::default()));
    assert!(maskgit.get::<TokenDynamicsConfig>().is_none());
    let causal = KindConfig::default_for(DynamicsKind::CAUSAL);
    assert_eq!(causal.get::<TokenDynamicsConfig>(), Some(&TokenDynamicsConfig::default()));
    let diffusion = KindConfig::default_for(DynamicsKind::DIFFUSION);
    assert_eq!(diffusion.get::<DiffusionConfig>(), Some(&DiffusionConfig::default()));

    // Equality compares kind and values; a clone is equal until changed.
    let mut changed = maskgit.clone();
    assert_eq!(changed, maskgit);
    changed.get_mut::<MaskGitConfig>().unwrap().mask_limit = 0.25;
    assert_ne!(changed, maskgit);
    // Causal settings are MaskGIT's token settings: same values, another kind.
    let causal_like = KindConfig::new(DynamicsKind::CAUSAL, MaskGitConfig::default().tokens);
    assert_eq!(causal_like, causal);
    assert_ne!(
        causal,
        KindConfig::new(DynamicsKind::CAUSAL, TokenDynamicsConfig { reversible: true, ..Default::default() })
    );
}

#[test]
#[should_panic(expected = "settings of another type than the `causal` kind's own")]
fn settings_of_another_kind_are_refused() {
    KindConfig::new(DynamicsKind::CAUSAL, DiffusionConfig::default());
}

#[test]
fn a_kind_config_serialises_as_its_kind_beside_its_settings() {
    let mut cfg = KindConfig::default_for(DynamicsKind::DIFFUSION);
    let json = serde_json::to_value(&cfg).unwrap();
    assert_eq!(json, serde_json::json!({ "kind": "diffusion", "denoise_steps": 64 }));
    cfg.get_mut::<DiffusionConfig>().unwrap().denoise_steps = 8;
    let mut fields = serde_json::to_value(&cfg).unwrap().as_object().unwrap().clone();
    fields.remove("kind");
    assert_eq!(KindConfig::parse(DynamicsKind::DIFFUSION, fields).unwrap(), cfg);
    // Within the `model` section the kind's keys sit beside the shared ones.
    let model = serde_json::to_value(DynamicsConfig::default_for(DynamicsKind::CAUSAL)).unwrap();
    assert_eq!(model["kind"], "causal");
    assert_eq!(model["model_dim"], 512);
    assert_eq!(model["changed_token_weight"], 1.0);
    // A key the kind does not have is an error naming it.
    let mut bad = Map::new();
    bad.insert("denoise_step".into(), Value::from(8));
    let err = KindConfig::parse(DynamicsKind::DIFFUSION, bad).unwrap_err();
    assert!(err.contains("denoise_step"), "{err}");
}
