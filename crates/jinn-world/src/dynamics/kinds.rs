//! The registry rows of the two token dynamics kinds, MaskGIT and causal: both are a
//! [`crate::Genie`] on a VQ tokenizer, trained by [`DynamicsTask`].

use super::{MaskGitConfig, TokenDynamicsConfig};
use crate::dynamics::task::DynamicsTask;
use crate::dynamics_kinds::{
    default_settings, parse_settings, world_task, DynamicsKind, DynamicsKindEntry, KindSettings,
    ParseSettings,
};
use crate::genie::{assemble_genie, load_genie, GenieConfig};
use crate::tokenizer::TokenizerKind;
use crate::world_model::WorldModel;
use burn::tensor::Device;
use std::path::Path;

impl DynamicsKind {
    /// Masked token prediction, spatial full / temporal causal attention
    /// ([`crate::dynamics::maskgit`]).
    pub const MASKGIT: DynamicsKind = DynamicsKind::named("maskgit");
    /// Next token within the frame, spatial and temporal causal attention
    /// ([`crate::dynamics::causal`]).
    pub const CAUSAL: DynamicsKind = DynamicsKind::named("causal");
}

/// MaskGIT dynamics, with [`MaskGitConfig`].
pub const MASKGIT_ENTRY: DynamicsKindEntry =
    token_kind(DynamicsKind::MASKGIT, default_settings::<MaskGitConfig>, parse_settings::<MaskGitConfig>);

/// Causal dynamics, with [`TokenDynamicsConfig`].
pub const CAUSAL_ENTRY: DynamicsKindEntry = token_kind(
    DynamicsKind::CAUSAL,
    default_settings::<TokenDynamicsConfig>,
    parse_settings::<TokenDynamicsConfig>,
);

/// The row of a token kind: a [`crate::Genie`] on a VQ tokenizer, trained by [`DynamicsTask`].
const fn token_kind(
    kind: DynamicsKind,
    default_settings: fn() -> Box<dyn KindSettings>,
    parse_settings: ParseSettings,
) -> DynamicsKindEntry {
    DynamicsKindEntry {
        kind,
        tokenizer: TokenizerKind::Vq,
        default_settings,
        parse_settings,
        build_task: |cfg, inputs| world_task(cfg, inputs, assemble_genie, DynamicsTask::new),
        load_world: load_token_world,
    }
}

/// A trained token world model for rollouts.
fn load_token_world(run_dir: &Path, device: &Device) -> jinn_train::Result<(WorldModel, GenieConfig, u64)> {
    let (genie, cfg, step) = load_genie(run_dir, device)?;
    Ok((Box::new(genie), cfg, step))
}
