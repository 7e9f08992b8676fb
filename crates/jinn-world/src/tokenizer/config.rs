//! The `model` section of a tokenizer run config: a [`VqConfig`] or a [`MaeConfig`], chosen
//! by `kind = "vq" | "mae"` and stored the same way in checkpoints.
//!
//! Each kind's config holds only the fields that kind reads. A field of the other kind is an
//! error naming it, unless it holds that kind's default: config files are merged over the
//! defaults of the run config (a VQ tokenizer's), and checkpoints written while one struct
//! carried both kinds store every field, so such values are dropped on reading.

use crate::mae::MaeConfig;
use crate::tokenizer::coder::CoderConfig;
use crate::tokenizer::VqConfig;
use jinn_nn::NnError;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A tokenizer's architecture, of either kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TokenizerConfig {
    /// The VQ-VAE [`crate::Tokenizer`]: discrete codes (for MaskGIT and causal dynamics).
    Vq(VqConfig),
    /// The masked autoencoder [`crate::mae::MaeTokenizer`]: continuous latents (for diffusion
    /// dynamics).
    Mae(MaeConfig),
}

/// Which tokenizer a [`TokenizerConfig`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TokenizerKind {
    /// VQ-VAE: discrete codes (for MaskGIT and causal dynamics).
    #[default]
    Vq,
    /// Masked autoencoder: continuous tanh-bounded latents (for diffusion dynamics).
    Mae,
}

impl std::str::FromStr for TokenizerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "vq" => Ok(TokenizerKind::Vq),
            "mae" => Ok(TokenizerKind::Mae),
            other => Err(format!("unknown tokenizer kind `{other}`; expected `vq` or `mae`")),
        }
    }
}

impl std::fmt::Display for TokenizerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenizerKind::Vq => "vq",
            TokenizerKind::Mae => "mae",
        })
    }
}

impl Default for TokenizerConfig {
    fn default() -> Self {
        TokenizerConfig::Vq(VqConfig::default())
    }
}

impl TokenizerConfig {
    /// The kind this config builds.
    pub fn kind(&self) -> TokenizerKind {
        match self {
            TokenizerConfig::Vq(_) => TokenizerKind::Vq,
            TokenizerConfig::Mae(_) => TokenizerKind::Mae,
        }
    }

    /// The frames and encoder/decoder shapes.
    pub fn coder(&self) -> &CoderConfig {
        match self {
            TokenizerConfig::Vq(c) => &c.coder,
            TokenizerConfig::Mae(c) => &c.coder,
        }
    }

    /// The VQ config; an error naming `model.kind` for an MAE config.
    pub fn vq(&self) -> Result<&VqConfig, NnError> {
        match self {
            TokenizerConfig::Vq(c) => Ok(c),
            TokenizerConfig::Mae(_) => Err(self.wrong_kind(TokenizerKind::Vq)),
        }
    }

    /// The MAE config; an error naming `model.kind` for a VQ config.
    pub fn mae(&self) -> Result<&MaeConfig, NnError> {
        match self {
            TokenizerConfig::Mae(c) => Ok(c),
            TokenizerConfig::Vq(_) => Err(self.wrong_kind(TokenizerKind::Mae)),
        }
    }

    fn wrong_kind(&self, want: TokenizerKind) -> NnError {
        NnError::InvalidConfig {
            field: "kind",
            reason: format!("this is a `{}` tokenizer config; expected `{want}`", self.kind()),
        }
    }
}

/// A kind's default config as a JSON object, without `kind`.
fn default_fields(kind: TokenizerKind) -> Map<String, Value> {
    jinn_train::config::fields_without_kind(&match kind {
        TokenizerKind::Vq => TokenizerConfig::Vq(VqConfig::default()),
        TokenizerKind::Mae => TokenizerConfig::Mae(MaeConfig::default()),
    })
}

impl<'de> Deserialize<'de> for TokenizerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, fields) = jinn_train::config::take_kind::<TokenizerKind>(Map::deserialize(deserializer)?)
            .map_err(D::Error::custom)?;
        let other = match kind {
            TokenizerKind::Vq => TokenizerKind::Mae,
            TokenizerKind::Mae => TokenizerKind::Vq,
        };
        let fields = jinn_train::config::own_kind_fields(
            fields,
            &kind.to_string(),
            "tokenizer",
            &default_fields(kind),
            &[default_fields(other)],
        )
        .map_err(D::Error::custom)?;
        let fields = Value::Object(fields);
        let config = match kind {
            TokenizerKind::Vq => serde_json::from_value(fields).map(TokenizerConfig::Vq),
            TokenizerKind::Mae => serde_json::from_value(fields).map(TokenizerConfig::Mae),
        };
        config.map_err(|e| D::Error::custom(format!("a `{kind}` tokenizer config: {e}")))
    }
}
