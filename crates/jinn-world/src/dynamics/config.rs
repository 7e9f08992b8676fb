//! The `model` section of a dynamics run: the settings every kind reads, and, tagged by
//! `kind`, each kind's own ([`KindConfig`]). A kind's config has no field it ignores; a key of
//! another kind set in a config is an error naming it.

use crate::dynamics_kinds::{DynamicsKind, KindConfig};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Architecture and loss settings of a dynamics model (the `model` section of a dynamics run
/// config). Defaults are Jasmine's: width 512, FFN 2048, 8 heads, 6 blocks, MaskGIT with mask
/// ratio `U[0.5, 1)`, no z-loss. The codebook size and action width come from the tokenizer
/// and the action source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DynamicsConfig {
    /// Transformer width `M`.
    pub model_dim: usize,
    /// FFN hidden width `D`.
    pub ffn_dim: usize,
    /// Attention heads (must divide `model_dim`).
    pub num_heads: usize,
    /// Axial blocks.
    pub num_blocks: usize,
    /// Width of ground-truth action embeddings (`--actions gt`); with a LAM the LAM's latent
    /// width is used.
    pub action_dim: usize,
    /// With a trained (frozen) LAM: condition on a learned embedding `[K, L]` of the LAM's
    /// code index instead of the code vector itself (Jasmine: `false`). A LAM whose codes lie
    /// close together (cosine ≈ 0.99) hands the dynamics nearly equal vectors; an embedding
    /// keeps the codes' identities apart. Not for a co-trained LAM (an index passes no
    /// gradient).
    pub lam_code_embedding: bool,
    /// The kind (`kind = "maskgit"`, `"causal"` or `"diffusion"`) and its own settings.
    #[serde(flatten)]
    pub per_kind: KindConfig,
}

/// The settings of the kinds that predict tokenizer codes (MaskGIT and causal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenDynamicsConfig {
    /// Weight of the z-loss `mean(logsumexp(logits)²)` over the loss positions (0 = off).
    pub z_loss_weight: f64,
    /// Loss weight of the tokens that differ from the token at the same position one frame
    /// earlier, relative to 1 for the others (Jasmine: 1, every token alike). The moving
    /// objects of a game — its ball — are a few tokens per frame against a static scene; a
    /// weight above 1 spends the loss on them.
    pub changed_token_weight: f64,
    /// Reversible backbone: `num_blocks` reversible axial blocks (additive coupling on two
    /// `model_dim/2` halves, F = spatial+temporal attention with `num_heads` heads per half,
    /// G = FFN) instead of the axial blocks, trained with memory-free backprop
    /// ([`crate::genie::reversible`]).
    pub reversible: bool,
    /// With a trained LAM and data that record actions: a transition whose recorded action is
    /// led by a LAM code ([`crate::code_partners`]) but whose own LAM code stands for another
    /// action trains with the leading code (not in Jasmine, which trains on the LAM's codes
    /// alone). A LAM gives an action that changes nothing — left, against the left wall — the
    /// code of doing nothing, so ungrounded dynamics never learn what the "left" code does at a
    /// wall, and a player holding it there makes the paddle slide into the wall and vanish.
    /// A co-trained LAM is refused (its codes change as it trains); a model trained on the
    /// recorded actions (`--actions gt`) has no codes to ground and ignores it.
    pub ground_lam_codes: bool,
}

impl Default for TokenDynamicsConfig {
    fn default() -> Self {
        TokenDynamicsConfig {
            z_loss_weight: 0.0,
            changed_token_weight: 1.0,
            reversible: false,
            ground_lam_codes: false,
        }
    }
}

/// MaskGIT's settings: the token settings and its masking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MaskGitConfig {
    /// The mask ratio is drawn from `U[mask_limit, 1)`, once per clip (Jasmine) or once per
    /// frame (`mask_ratio_per_frame`).
    pub mask_limit: f64,
    /// Draw the mask ratio for each frame of a clip rather than once for the clip (not in
    /// Jasmine). A rollout generates one frame after whole context frames; with one ratio per
    /// clip, training seldom shows a frame after lightly masked ones, with one per frame it
    /// shows every mix.
    pub mask_ratio_per_frame: bool,
    /// Every token slot of frame `t` also receives a learned embedding of the token at the
    /// same position in frame `t − 1` (not in Jasmine). Training masks each frame with ratio
    /// `p ≥ mask_limit`, so without it a masked frame rarely sees the previous frames' ball
    /// tokens that fix where the ball goes next, while at sampling the context is always
    /// whole; with it every masked frame sees its predecessor whole, as in a rollout.
    pub previous_frame_input: bool,
    /// How many earlier frames the previous-frame input reaches back (with
    /// `previous_frame_input`; 1 otherwise): slot `(t, n)` embeds the tokens `(t − k, n)` for
    /// `k = 1..=depth`, each through its own table. With depth 2 a slot sees where an object
    /// was in each of the last two frames, its velocity, whole, as a rollout's context is.
    pub previous_frame_depth: usize,
    /// How far around its own position a slot reads frame `t − 1` (with
    /// `previous_frame_input`; 0 otherwise): slot `(t, y, x)` also embeds the tokens
    /// `(t − 1, y + dy, x + dx)` for `|dy|, |dx| ≤ radius` on the tokenizer's patch grid, each
    /// offset through its own table; positions off the grid add nothing. At radius 1 a slot
    /// sees an object that may move into it, and what it would meet there, in its own input.
    pub previous_frame_radius: usize,
    /// The share of training clips whose previous-frame input reads, at the masked positions,
    /// the model's own argmax predictions (from a first, gradient-free pass over the same
    /// masked clip) instead of the true tokens (with `previous_frame_input`; 0 = every clip
    /// reads the truth, not in Jasmine). A rollout reads only tokens it generated itself;
    /// training on its own predictions shows the model the slips it must carry on from.
    /// Validation reads the same way, so its cross-entropy compares only between runs of one
    /// share.
    pub previous_frame_own_share: f64,
    /// Loss weights and backbone.
    #[serde(flatten)]
    pub tokens: TokenDynamicsConfig,
}

impl Default for MaskGitConfig {
    fn default() -> Self {
        MaskGitConfig {
            mask_limit: 0.5,
            mask_ratio_per_frame: false,
            previous_frame_input: false,
            previous_frame_depth: 1,
            previous_frame_radius: 0,
            previous_frame_own_share: 0.0,
            tokens: TokenDynamicsConfig::default(),
        }
    }
}

impl Default for DynamicsConfig {
    fn default() -> Self {
        DynamicsConfig {
            model_dim: 512,
            ffn_dim: 2048,
            num_heads: 8,
            num_blocks: 6,
            action_dim: 32,
            lam_code_embedding: false,
            per_kind: KindConfig::default_for(DynamicsKind::MASKGIT),
        }
    }
}

impl DynamicsConfig {
    /// Jasmine's defaults with `kind`'s default settings.
    pub fn default_for(kind: DynamicsKind) -> Self {
        DynamicsConfig { per_kind: KindConfig::default_for(kind), ..DynamicsConfig::default() }
    }

    /// Which dynamics model.
    pub fn kind(&self) -> DynamicsKind {
        self.per_kind.kind()
    }

    /// MaskGIT's settings (`None` for another kind).
    pub fn maskgit(&self) -> Option<&MaskGitConfig> {
        self.per_kind.get()
    }

    /// MaskGIT's settings to change (`None` for another kind).
    pub fn maskgit_mut(&mut self) -> Option<&mut MaskGitConfig> {
        self.per_kind.get_mut()
    }

    /// The token settings of MaskGIT and causal dynamics (`None` for other kinds).
    pub fn tokens(&self) -> Option<&TokenDynamicsConfig> {
        self.maskgit().map(|m| &m.tokens).or_else(|| self.per_kind.get())
    }

    /// The token settings to change (`None` for other kinds).
    pub fn tokens_mut(&mut self) -> Option<&mut TokenDynamicsConfig> {
        if self.maskgit().is_some() {
            return self.maskgit_mut().map(|m| &mut m.tokens);
        }
        self.per_kind.get_mut()
    }

    /// Whether the backbone is reversible (only token dynamics can be).
    pub fn reversible(&self) -> bool {
        self.tokens().is_some_and(|t| t.reversible)
    }
}

/// `kind`'s default config as a JSON object, without `kind`.
fn default_fields(kind: DynamicsKind) -> Map<String, Value> {
    jinn_train::config::fields_without_kind(&DynamicsConfig::default_for(kind))
}

/// Removes `key` from `fields` and reads it as a `T` (`default` when absent).
fn take<T: DeserializeOwned>(fields: &mut Map<String, Value>, key: &str, default: T) -> Result<T, String> {
    match fields.remove(key) {
        None => Ok(default),
        Some(v) => serde_json::from_value(v).map_err(|e| format!("`{key}`: {e}")),
    }
}

/// The settings every kind shares, taken out of `fields` (Jasmine's defaults where absent),
/// with MaskGIT's default settings in `per_kind`.
fn shared_settings(fields: &mut Map<String, Value>) -> Result<DynamicsConfig, String> {
    let d = DynamicsConfig::default();
    Ok(DynamicsConfig {
        model_dim: take(fields, "model_dim", d.model_dim)?,
        ffn_dim: take(fields, "ffn_dim", d.ffn_dim)?,
        num_heads: take(fields, "num_heads", d.num_heads)?,
        num_blocks: take(fields, "num_blocks", d.num_blocks)?,
        action_dim: take(fields, "action_dim", d.action_dim)?,
        lam_code_embedding: take(fields, "lam_code_embedding", d.lam_code_embedding)?,
        per_kind: d.per_kind,
    })
}

impl<'de> Deserialize<'de> for DynamicsConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, fields) = jinn_train::config::take_kind::<DynamicsKind>(Map::deserialize(deserializer)?)
            .map_err(D::Error::custom)?;
        let others: Vec<Map<String, Value>> =
            DynamicsKind::all().filter(|k| *k != kind).map(default_fields).collect();
        let mut fields = jinn_train::config::own_kind_fields(
            fields,
            &kind.to_string(),
            "dynamics model",
            &default_fields(kind),
            &others,
        )
        .map_err(D::Error::custom)?;
        let shared = shared_settings(&mut fields).map_err(D::Error::custom)?;
        let per_kind = KindConfig::parse(kind, fields)
            .map_err(|e| D::Error::custom(format!("a `{kind}` dynamics model config: {e}")))?;
        Ok(DynamicsConfig { per_kind, ..shared })
    }
}
