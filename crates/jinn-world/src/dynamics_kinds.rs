//! The registry of dynamics kinds: one row per kind in [`DYNAMICS_KINDS`]. A row holds all the
//! rest of jinn needs from a kind: the `model.kind` name configs use, its own settings (the
//! `model` keys only it reads), how its training task is built, and how a trained world model
//! of it is loaded for rollouts. `jinn train dynamics`, the demo, `jinn bench train`,
//! `jinn sample` and `jinn eval world` all go through it, so a new kind is its folder (declared
//! in `lib.rs`) and one row here (docs/adding-a-model.md walks through one).

mod build;
mod settings;

pub use build::{world_task, BuiltWorldTask, WorldTaskInputs};
pub use settings::{default_settings, parse_settings, KindConfig, KindSettings};

use crate::genie::GenieConfig;
use crate::tokenizer::TokenizerKind;
use crate::world_model::WorldModel;
use burn::tensor::Device;
use jinn_train::Result;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::path::Path;

/// Every dynamics kind, in the order help texts list them.
pub const DYNAMICS_KINDS: &[DynamicsKindEntry] =
    &[crate::dynamics::MASKGIT_ENTRY, crate::dynamics::CAUSAL_ENTRY, crate::diffusion::DIFFUSION_ENTRY];

/// One registry row: a dynamics kind.
pub struct DynamicsKindEntry {
    /// The kind (its name is `model.kind` as configs spell it).
    pub kind: DynamicsKind,
    /// The tokenizer kind its world model is assembled on.
    pub tokenizer: TokenizerKind,
    /// The kind's own settings at their defaults.
    pub default_settings: fn() -> Box<dyn KindSettings>,
    /// The kind's own settings read from their `model` keys (shared keys and `kind` removed);
    /// an unknown key is an error naming it.
    pub parse_settings: ParseSettings,
    /// Assemble a fresh world model and its training task.
    pub build_task: fn(&crate::DynamicsRunConfig, WorldTaskInputs<'_>) -> Result<BuiltWorldTask>,
    /// Load a trained world model of this kind from a dynamics run (newest good checkpoint):
    /// the model, its config and the checkpoint's step.
    pub load_world: LoadWorld,
}

/// Reads a kind's settings from their `model` keys.
pub type ParseSettings = fn(Map<String, Value>) -> std::result::Result<Box<dyn KindSettings>, String>;

/// Loads a trained world model from a dynamics run: the model, its config and the step.
pub type LoadWorld = fn(&Path, &Device) -> Result<(WorldModel, GenieConfig, u64)>;

/// A dynamics kind, by the name configs give it (`maskgit`, `causal`, `diffusion`); every value
/// names a row of [`DYNAMICS_KINDS`]. Each kind's folder defines its constant
/// (`DynamicsKind::MASKGIT`, …).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DynamicsKind(&'static str);

impl DynamicsKind {
    /// The kind called `name`; for the constants of the kinds' folders, which a test checks
    /// against the registry.
    pub(crate) const fn named(name: &'static str) -> Self {
        DynamicsKind(name)
    }

    /// Every registered kind, in registry order.
    pub fn all() -> impl Iterator<Item = DynamicsKind> {
        DYNAMICS_KINDS.iter().map(|e| e.kind)
    }

    /// `model.kind` as configs spell it.
    pub fn name(self) -> &'static str {
        self.0
    }

    /// The kind's registry row.
    pub fn entry(self) -> &'static DynamicsKindEntry {
        DYNAMICS_KINDS
            .iter()
            .find(|e| e.kind == self)
            .unwrap_or_else(|| panic!("dynamics kind `{}` has no row in DYNAMICS_KINDS", self.0))
    }

    /// The registered names, for messages: "`maskgit`, `causal` or `diffusion`".
    pub fn expected() -> String {
        let names: Vec<String> = Self::all().map(|k| format!("`{k}`")).collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl Default for DynamicsKind {
    /// MaskGIT, Jasmine's default.
    fn default() -> Self {
        DynamicsKind::MASKGIT
    }
}

impl std::str::FromStr for DynamicsKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::all()
            .find(|k| k.0 == s)
            .ok_or_else(|| format!("unknown dynamics kind `{s}`; expected {}", Self::expected()))
    }
}

impl std::fmt::Display for DynamicsKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::fmt::Debug for DynamicsKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for DynamicsKind {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for DynamicsKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
