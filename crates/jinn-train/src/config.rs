//! TOML run configs with `--set key=value` overrides, and the shared [`TrainConfig`] section.
//!
//! Resolution order for a typed config `T` (a model's whole run config, e.g.
//! `{ model: …, train: TrainConfig, data: … }`):
//! 1. `T::default()` serialised to a TOML tree (so every defaulted field can be overridden);
//! 2. the TOML file merged over it (tables recursively, other values replaced);
//! 3. each `--set a.b.c=value` applied in order. `value` is parsed as a TOML value
//!    (`1000`, `3e-4`, `true`, `"x"`, `[1, 2]`); anything that does not parse as one is taken
//!    as a bare string (`model.kind=vq`). The key must already exist (step 1 or 2), or its
//!    parent table must exist (for optional fields whose default is absent). An integer is
//!    accepted where a float is expected; any other change of type is an error naming the key,
//!    the expected type and the value;
//! 4. deserialisation into `T`; typed configs use `#[serde(deny_unknown_fields)]`, so a
//!    misspelt key in the file is an error naming it.

use crate::error::{Result, TrainError};
use crate::optim::OptimConfig;
use crate::precision::Precision;
use crate::schedule::LrSchedule;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::{Table, Value};

/// The training-loop settings every model shares (the `train` section). Defaults follow
/// Jasmine's tokenizer script (`train_tokenizer_vqvae.py`'s `Args`), except where noted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Total optimiser steps (`num_steps`).
    pub steps: u64,
    /// Batch size in samples per optimiser step: the whole batch of a process, split over its
    /// `local_ranks`; under `mpirun` each process (rank) takes this many.
    pub batch_size: usize,
    /// Micro-batches per step; `batch_size` must divide by it (Jasmine: 1, no accumulation).
    pub grad_accum: usize,
    /// Run seed: every random draw derives from (seed, step, purpose).
    pub seed: u64,
    /// Learning-rate schedule.
    pub lr: LrSchedule,
    /// AdamW hyperparameters.
    pub optim: OptimConfig,
    /// Global-norm gradient clipping threshold; absent = no clipping (Jasmine).
    pub clip_norm: Option<f64>,
    /// Log training metrics every N steps (Jasmine `log_interval` 50).
    pub log_every: u64,
    /// Validate every N steps; 0 = never (Jasmine `val_interval` 20,000).
    pub val_every: u64,
    /// Batches per validation (Jasmine `val_steps` 50).
    pub val_batches: usize,
    /// Save reconstruction images every N steps; 0 = never (Jasmine 1000).
    pub image_every: u64,
    /// Write a checkpoint every N steps; 0 = never (Jasmine tokenizer 1000).
    pub ckpt_every: u64,
    /// Retention: keep the newest N checkpoints (Orbax `max_to_keep` 3).
    pub keep_last: usize,
    /// Retention: also keep every step that is a multiple of N; 0 = none (20,000).
    pub keep_every: u64,
    /// Compute precision: `"f32"` (default, fastest on CPU) or `"bf16"` (bf16 compute, f32
    /// master weights; see [`crate::precision`]).
    pub precision: Precision,
    /// Data-parallel ranks inside this process ([`crate::distributed::threads`]): threads that
    /// each train a replica on `batch_size / local_ranks` samples of every batch with an equal
    /// share of the CPU's cores, and average their gradients. The batch, the random draws and
    /// so the model are those of one rank (up to the order of float sums); on a few cores it is
    /// faster. For the CPU (`jinn train` on a GPU trains one rank); 1 (default) = one rank using
    /// every core.
    pub local_ranks: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            steps: 300_000,
            batch_size: 48,
            grad_accum: 1,
            seed: 0,
            lr: LrSchedule::default(),
            optim: OptimConfig::default(),
            clip_norm: None,
            log_every: 50,
            val_every: 20_000,
            val_batches: 50,
            image_every: 1000,
            ckpt_every: 1000,
            keep_last: 3,
            keep_every: 20_000,
            precision: Precision::F32,
            local_ranks: 1,
        }
    }
}

impl TrainConfig {
    /// Check every field; errors name it (`train.*`).
    pub fn validate(&self) -> Result<()> {
        let positive = [("train.steps", self.steps), ("train.log_every", self.log_every)];
        if let Some((f, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(TrainError::config(*f, "must be ≥ 1"));
        }
        if self.batch_size == 0 {
            return Err(TrainError::config("train.batch_size", "must be ≥ 1"));
        }
        if self.grad_accum == 0 || !self.batch_size.is_multiple_of(self.grad_accum) {
            return Err(TrainError::config(
                "train.grad_accum",
                format!(
                    "must be ≥ 1 and divide train.batch_size ({}), got {}",
                    self.batch_size, self.grad_accum
                ),
            ));
        }
        let split = self.grad_accum * self.local_ranks;
        if self.local_ranks == 0 || !self.batch_size.is_multiple_of(split) {
            return Err(TrainError::config(
                "train.local_ranks",
                format!(
                    "must be ≥ 1, and train.grad_accum ({}) × train.local_ranks must divide \
                     train.batch_size ({}), got {}",
                    self.grad_accum, self.batch_size, self.local_ranks
                ),
            ));
        }
        if self.val_every > 0 && self.val_batches == 0 {
            return Err(TrainError::config("train.val_batches", "must be ≥ 1 when train.val_every > 0"));
        }
        if let Some(c) = self.clip_norm {
            if !(c.is_finite() && c > 0.0) {
                return Err(TrainError::config("train.clip_norm", format!("must be > 0, got {c}")));
            }
        }
        self.lr.validate(self.steps)?;
        self.optim.validate()
    }

    /// Samples per micro-batch of the process (what validation and evaluation batch).
    pub fn micro_batch(&self) -> usize {
        self.batch_size / self.grad_accum.max(1)
    }

    /// Samples per micro-batch on each of the process's `local_ranks`.
    pub fn rank_micro_batch(&self) -> usize {
        self.micro_batch() / self.local_ranks.max(1)
    }
}

/// Load `T` from an optional TOML file plus `--set` overrides (see the module docs).
pub fn load<T: Serialize + DeserializeOwned + Default>(
    file: Option<&Path>,
    overrides: &[String],
) -> Result<T> {
    let (text, name) = match file {
        Some(p) => (std::fs::read_to_string(p).map_err(|e| TrainError::io(p, e))?, p.display().to_string()),
        None => (String::new(), "<defaults>".to_string()),
    };
    from_str(&text, &name, overrides)
}

/// Like [`load`] with the TOML text given; `source_name` names it in errors.
pub fn from_str<T: Serialize + DeserializeOwned + Default>(
    text: &str,
    source_name: &str,
    overrides: &[String],
) -> Result<T> {
    let parse_err = |reason: String| TrainError::ConfigParse { source_name: source_name.to_string(), reason };
    let mut tree =
        to_table(&T::default()).map_err(|e| parse_err(format!("defaults do not serialise: {e}")))?;
    let file: Table = toml::from_str(text).map_err(|e| parse_err(e.to_string()))?;
    merge(&mut tree, file);
    for spec in overrides {
        apply_override(&mut tree, spec)?;
    }
    // Round-trip through text so serde errors carry the offending key's line.
    let resolved = toml::to_string(&tree).map_err(|e| parse_err(e.to_string()))?;
    toml::from_str(&resolved).map_err(|e| TrainError::ConfigParse {
        source_name: if overrides.is_empty() {
            source_name.to_string()
        } else {
            format!("{source_name} with --set overrides")
        },
        reason: e.to_string(),
    })
}

/// The resolved config as JSON (what checkpoints store).
pub fn to_json<T: Serialize>(config: &T) -> serde_json::Value {
    serde_json::to_value(config).expect("configs serialise to JSON")
}

/// Refuses a key of `fields` that `T`'s default does not serialise: `deny_unknown_fields` for a
/// config struct with a flattened part (which serde's attribute does not support). `what`
/// names the section in the error.
pub fn known_fields_only<T: Default + Serialize>(
    fields: &serde_json::Map<String, serde_json::Value>,
    what: &str,
) -> std::result::Result<(), String> {
    let serde_json::Value::Object(known) = to_json(&T::default()) else {
        return Ok(());
    };
    match fields.keys().find(|k| !known.contains_key(*k)) {
        None => Ok(()),
        Some(key) => {
            let names: Vec<&str> = known.keys().map(String::as_str).collect();
            Err(format!("unknown field `{key}` of the {what} config, expected one of {}", names.join(", ")))
        }
    }
}

/// `stored` (e.g. a checkpoint's `model` config section) read as a `T` and written back, so
/// keys added to `T` since it was written take their serde defaults, as a fresh load would
/// give them. A value that does not parse as a `T` is returned unchanged (a comparison with it
/// then names the offending key).
pub fn normalise<T: Serialize + DeserializeOwned>(stored: &serde_json::Value) -> serde_json::Value {
    serde_json::from_value::<T>(stored.clone()).map(|c| to_json(&c)).unwrap_or_else(|_| stored.clone())
}

/// A kind-tagged config section's fields, with its `kind` taken out and read as a `K`
/// (`K`'s default when absent).
pub fn take_kind<K: DeserializeOwned + Default>(
    mut fields: serde_json::Map<String, serde_json::Value>,
) -> std::result::Result<(K, serde_json::Map<String, serde_json::Value>), String> {
    let kind = match fields.remove("kind") {
        Some(k) => serde_json::from_value(k).map_err(|e| format!("kind: {e}"))?,
        None => K::default(),
    };
    Ok((kind, fields))
}

/// `config` (a kind-tagged section) as a JSON object without its `kind`.
pub fn fields_without_kind<T: Serialize>(config: &T) -> serde_json::Map<String, serde_json::Value> {
    match to_json(config) {
        serde_json::Value::Object(mut fields) => {
            fields.remove("kind");
            fields
        }
        other => panic!("a kind-tagged config serialises to an object, not {other}"),
    }
}

/// The fields of a kind-tagged config section (its `kind` key removed), checked against the
/// kind's own fields `own` (its default config as JSON). A key of another kind (in one of
/// `others`) that holds that kind's default is dropped: configs resolve over the default
/// kind's defaults, and stored configs may carry every kind's fields. Such a key set to
/// anything else, or a key no kind has, is an error naming it; `what` names the section
/// ("tokenizer", "dynamics").
pub fn own_kind_fields(
    mut fields: serde_json::Map<String, serde_json::Value>,
    kind: &str,
    what: &str,
    own: &serde_json::Map<String, serde_json::Value>,
    others: &[serde_json::Map<String, serde_json::Value>],
) -> std::result::Result<serde_json::Map<String, serde_json::Value>, String> {
    let foreign: Vec<String> = fields.keys().filter(|k| !own.contains_key(*k)).cloned().collect();
    for key in foreign {
        let defaults: Vec<&serde_json::Value> = others.iter().filter_map(|o| o.get(&key)).collect();
        if defaults.is_empty() {
            let known: Vec<&str> = own.keys().map(String::as_str).collect();
            return Err(format!(
                "unknown field `{key}` of a `{kind}` {what}, expected one of kind, {}",
                known.join(", ")
            ));
        }
        if !defaults.iter().any(|d| same_value(d, &fields[&key])) {
            return Err(format!("`{key}`: a `{kind}` {what} does not use it; remove it from the config"));
        }
        fields.remove(&key);
    }
    Ok(fields)
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn to_table<T: Serialize>(value: &T) -> std::result::Result<Table, toml::ser::Error> {
    let text = toml::to_string(value)?;
    Ok(toml::from_str(&text).expect("toml round-trips its own output"))
}

/// Merge `over` into `base`: tables recursively, everything else replaced.
fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Integer(_) => "integer",
        Value::Float(_) => "float",
        Value::Boolean(_) => "boolean",
        Value::Datetime(_) => "datetime",
        Value::Array(_) => "array",
        Value::Table(_) => "table",
    }
}

/// Parse the right-hand side of `--set`: a TOML value, or else a bare string.
fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match toml::from_str::<Table>(&doc) {
        Ok(mut t) => t.remove("v").expect("parsed key present"),
        Err(_) => Value::String(raw.to_string()),
    }
}

/// Apply one `a.b.c=value` override to `tree` (see the module docs for the rules).
pub fn apply_override(tree: &mut Table, spec: &str) -> Result<()> {
    let bad = |reason: String| TrainError::ConfigParse { source_name: format!("--set {spec}"), reason };
    let (key, raw) = spec.split_once('=').ok_or_else(|| bad("expected key=value".into()))?;
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad(format!("`{key}` is not a dotted key like train.steps")));
    }
    let mut table = tree;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        table = match table.get_mut(*part) {
            Some(Value::Table(t)) => t,
            Some(other) => {
                return Err(bad(format!(
                    "`{}` is a {}, not a table",
                    parts[..=i].join("."),
                    type_name(other)
                )))
            }
            None => return Err(bad(format!("unknown config key `{}`", parts[..=i].join(".")))),
        };
    }
    let leaf = parts[parts.len() - 1];
    let mut value = parse_value(raw.trim());
    match table.get(leaf) {
        Some(old) => match (old, &value) {
            (Value::Float(_), Value::Integer(i)) => value = Value::Float(*i as f64),
            (Value::Table(_), _) => {
                return Err(bad(format!("`{key}` is a table; set one of its keys instead")));
            }
            (o, v) if type_name(o) != type_name(v) => {
                return Err(bad(format!(
                    "`{key}` expects a {}, got {} `{}`",
                    type_name(o),
                    type_name(v),
                    raw.trim()
                )));
            }
            _ => {}
        },
        // Absent leaf under an existing table: an optional field (checked by
        // deny_unknown_fields when deserialising).
        None if !table.is_empty() => {}
        None => return Err(bad(format!("unknown config key `{key}`"))),
    }
    table.insert(leaf.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct ModelCfg {
        dim: usize,
        name: String,
        dropout: f64,
    }
    impl Default for ModelCfg {
        fn default() -> Self {
            ModelCfg { dim: 128, name: "tok".into(), dropout: 0.0 }
        }
    }

    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct RunCfg {
        model: ModelCfg,
        train: TrainConfig,
    }

    fn set(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_file_and_overrides_resolve_in_order() {
        let text =
            "[model]\ndim = 64\n[train]\nsteps = 500\n[train.lr]\nwarmup_steps = 10\ndecay_steps = 20\n";
        let cfg: RunCfg = from_str(
            text,
            "run.toml",
            &set(&[
                "train.steps=1000",
                "model.dim=256",
                "model.name=vq",
                "train.lr.max_lr=1",
                "train.clip_norm=1.5",
            ]),
        )
        .unwrap();
        assert_eq!(cfg.model, ModelCfg { dim: 256, name: "vq".into(), dropout: 0.0 });
        assert_eq!(cfg.train.steps, 1000);
        assert_eq!(cfg.train.lr.warmup_steps, 10);
        assert_eq!(cfg.train.lr.max_lr, 1.0);
        assert_eq!(cfg.train.clip_norm, Some(1.5));
        assert_eq!(cfg.train.batch_size, 48); // untouched default
        cfg.train.validate().unwrap();
        // The resolved config survives JSON (what checkpoints store).
        let back: RunCfg = serde_json::from_value(to_json(&cfg)).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = from_str::<RunCfg>("", "x", &set(&["train.stepz=3"])).unwrap_err().to_string();
        assert!(err.contains("stepz"), "{err}");
        let err = from_str::<RunCfg>("", "x", &set(&["modle.dim=3"])).unwrap_err().to_string();
        assert!(err.contains("unknown config key `modle`"), "{err}");
        let err = from_str::<RunCfg>("[model]\ndimm = 3\n", "run.toml", &[]).unwrap_err().to_string();
        assert!(err.contains("dimm") && err.contains("run.toml"), "{err}");
        let err = from_str::<RunCfg>("", "x", &set(&["train.steps.x=3"])).unwrap_err().to_string();
        assert!(err.contains("`train.steps` is a integer") || err.contains("not a table"), "{err}");
    }

    #[test]
    fn type_mismatches_name_key_and_type() {
        let err = from_str::<RunCfg>("", "x", &set(&["train.steps=abc"])).unwrap_err().to_string();
        assert!(err.contains("`train.steps` expects a integer, got string `abc`"), "{err}");
        let err = from_str::<RunCfg>("", "x", &set(&["model.name=3"])).unwrap_err().to_string();
        assert!(err.contains("`model.name` expects a string"), "{err}");
        let err = from_str::<RunCfg>("[train]\nsteps = \"many\"\n", "run.toml", &[]).unwrap_err().to_string();
        assert!(err.contains("steps") && err.contains("run.toml"), "{err}");
        let err = from_str::<RunCfg>("", "x", &set(&["train.lr=3"])).unwrap_err().to_string();
        assert!(err.contains("is a table"), "{err}");
        let err = from_str::<RunCfg>("", "x", &set(&["train.steps"])).unwrap_err().to_string();
        assert!(err.contains("key=value"), "{err}");
    }

    #[test]
    fn a_kind_keeps_its_own_fields_and_drops_other_kinds_defaults_only() {
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let own = obj(serde_json::json!({"dim": 8, "levels": 64}));
        let others = [obj(serde_json::json!({"dim": 8, "ratio": 0.5, "steps": 2}))];
        let check = |fields: serde_json::Value| own_kind_fields(obj(fields), "flow", "model", &own, &others);
        // Another kind's keys at their defaults go (an integer equals the float it spells).
        let kept = check(serde_json::json!({"dim": 16, "ratio": 0.5, "steps": 2.0})).unwrap();
        assert_eq!(serde_json::Value::Object(kept), serde_json::json!({"dim": 16}));
        let err = check(serde_json::json!({"ratio": 0.25})).unwrap_err();
        assert_eq!(err, "`ratio`: a `flow` model does not use it; remove it from the config");
        let err = check(serde_json::json!({"levles": 3})).unwrap_err();
        assert!(
            err.contains("unknown field `levles` of a `flow` model") && err.contains("kind, dim, levels"),
            "{err}"
        );
        // The kind is taken out of the section, defaulting when absent.
        let (kind, rest) = take_kind::<String>(obj(serde_json::json!({"kind": "flow", "dim": 1}))).unwrap();
        assert_eq!((kind.as_str(), rest.len()), ("flow", 1));
        assert_eq!(take_kind::<String>(obj(serde_json::json!({}))).unwrap().0, "");
        assert!(take_kind::<String>(obj(serde_json::json!({"kind": 3}))).unwrap_err().starts_with("kind:"));
    }

    #[test]
    fn train_config_validation_names_fields() {
        let bad = TrainConfig { grad_accum: 5, ..TrainConfig::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("train.grad_accum"));
        let bad = TrainConfig { clip_norm: Some(0.0), ..TrainConfig::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("train.clip_norm"));
        let bad = TrainConfig { steps: 100, ..TrainConfig::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("train.lr.warmup_steps"));
        TrainConfig::default().validate().unwrap();
        assert_eq!(TrainConfig { grad_accum: 4, ..TrainConfig::default() }.micro_batch(), 12);
    }
}
