//! The registry row of diffusion dynamics: a [`DiffusionGenie`] on an MAE tokenizer, trained
//! by [`DiffusionTask`].

use super::genie::{assemble_diffusion_genie, load_diffusion_genie, DiffusionGenie};
use super::task::DiffusionTask;
use super::DiffusionConfig;
use crate::dynamics_kinds::{default_settings, parse_settings, world_task, DynamicsKind, DynamicsKindEntry};
use crate::genie::GenieConfig;
use crate::tokenizer::TokenizerKind;
use crate::world_model::WorldModel;
use burn::tensor::Device;
use std::path::Path;

impl DynamicsKind {
    /// Diffusion forcing on an MAE tokenizer's continuous latents ([`crate::diffusion`]).
    pub const DIFFUSION: DynamicsKind = DynamicsKind::named("diffusion");
}

/// Diffusion dynamics, with [`DiffusionConfig`].
pub const DIFFUSION_ENTRY: DynamicsKindEntry = DynamicsKindEntry {
    kind: DynamicsKind::DIFFUSION,
    tokenizer: TokenizerKind::Mae,
    default_settings: default_settings::<DiffusionConfig>,
    parse_settings: parse_settings::<DiffusionConfig>,
    build_task: |cfg, inputs| world_task(cfg, inputs, assemble_diffusion_genie, DiffusionTask::new),
    load_world: load_diffusion_world,
};

/// A trained diffusion world model for rollouts.
fn load_diffusion_world(
    run_dir: &Path,
    device: &Device,
) -> jinn_train::Result<(WorldModel, GenieConfig, u64)> {
    let (genie, cfg, step): (DiffusionGenie, _, _) = load_diffusion_genie(run_dir, device)?;
    Ok((Box::new(genie), cfg, step))
}

impl crate::DynamicsConfig {
    /// Diffusion's settings (`None` for another kind).
    pub fn diffusion(&self) -> Option<&DiffusionConfig> {
        self.per_kind.get()
    }
}
