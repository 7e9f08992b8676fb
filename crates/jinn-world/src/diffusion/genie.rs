//! The diffusion world model (Jasmine's `GenieDiffusion`): a frozen MAE tokenizer, an action source (a
//! LAM or ground-truth action embeddings, exactly as in [`crate::genie`]) and
//! [`DiffusionDynamics`], trained on the diffusion-forcing loss.
//!
//! Its checkpoints are ordinary dynamics checkpoints (kind `dynamics`) whose stored
//! [`GenieConfig`] has `tokenizer.kind = "mae"` and `dynamics.kind = "diffusion"`, with the
//! number of noise levels `K` in `dynamics.denoise_steps`; [`load_diffusion_genie`] rebuilds
//! the model from the run alone.

use crate::diffusion::{draw_corruption, DiffusionDynamics, DiffusionOutput};
use crate::dynamics::{DynamicsConfig, DynamicsKind};
use crate::genie::{
    action_table, component_checkpoint, infer_actions, load_mae_tokenizer, resolve_actions, ActionSource,
    GenieConfig, DYNAMICS_KIND,
};
use crate::lam::Lam;
use crate::mae::MaeTokenizer;
use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor};
use jinn_data::rng::SampleStreams;
use jinn_nn::NnError;
use jinn_train::{Result, TrainError};
use std::path::Path;

/// The assembled diffusion world model (see the module docs).
#[derive(Module, Debug)]
pub struct DiffusionGenie {
    /// The frozen MAE tokenizer.
    pub tokenizer: MaeTokenizer,
    /// The LAM's encoder side (frozen, or co-trained), when actions are latent.
    pub lam: Option<Lam>,
    /// Ground-truth action embeddings `[num_actions, La]`, with `--actions gt`.
    pub action_embed: Option<Param<Tensor<2>>>,
    /// The diffusion dynamics.
    pub dynamics: DiffusionDynamics,
}

/// The result of [`DiffusionGenie::forward`].
#[derive(Debug, Clone)]
pub struct DiffusionGenieOutput {
    /// The clip's MAE latents `[B, T, N, L]` (no gradient).
    pub latents: Tensor<4>,
    /// Predictions, loss terms and signal levels.
    pub out: DiffusionOutput,
    /// LAM code indices `[B·(T−1)]`, when actions are latent.
    pub lam_indices: Option<Tensor<1, Int>>,
}

impl GenieConfig {
    /// Build a diffusion world model with fresh parameters (`tokenizer.kind = "mae"`,
    /// `dynamics.kind = "diffusion"`); frozen components are marked frozen.
    pub fn init_diffusion(&self, device: &Device) -> std::result::Result<DiffusionGenie, NnError> {
        let t = &self.tokenizer;
        let (lam, action_embed) = self.actions.init_source(t, self.dynamics.lam_code_embedding, device)?;
        let mae = t.mae()?;
        Ok(DiffusionGenie {
            tokenizer: mae.init(device)?.no_grad(),
            lam,
            action_embed,
            dynamics: self.dynamics.init_diffusion(mae.coder.latent_dim, self.action_dim(), device)?,
        })
    }
}

impl DiffusionGenie {
    /// Latent actions `[B, T−1, La]` (see [`crate::Genie::latent_actions`]).
    pub fn latent_actions(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
    ) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError> {
        infer_actions(self.lam.as_ref(), self.action_embed.as_ref(), None, videos, actions)
    }

    /// The table action ids index `[K, La]` (LAM codebook or recorded-action embeddings).
    pub fn action_table(&self) -> Tensor<2> {
        action_table(self.lam.as_ref(), self.action_embed.as_ref())
    }

    /// Training/evaluation forward (as `GenieDiffusion`'s): MAE latents of `videos` (frozen, unmasked),
    /// actions, levels and noise drawn from `rng`, predictions and the diffusion loss.
    pub fn forward(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        streams: &SampleStreams,
    ) -> std::result::Result<DiffusionGenieOutput, NnError> {
        let latents = self.tokenizer.encode(videos.clone())?.detach(); // [b, t, n, l]
        let (acts, lam_indices) = self.latent_actions(videos, actions)?; // [b, t−1, la]
        let corruption = draw_corruption(latents.dims(), self.dynamics.levels(), streams)?;
        let out = self.dynamics.forward_train(latents.clone(), acts, &corruption)?;
        Ok(DiffusionGenieOutput { latents, out, lam_indices })
    }

    /// Re-apply the freezing of the loaded components (after loading weights).
    pub fn refreeze(self, cfg: &GenieConfig) -> Self {
        let co_train = cfg.lam_co_trained();
        DiffusionGenie {
            tokenizer: self.tokenizer.no_grad(),
            lam: self.lam.map(|l| if co_train { l } else { l.no_grad() }),
            ..self
        }
    }
}

/// Assemble a new diffusion world model for training: the MAE tokenizer (and LAM) from their
/// runs, fresh dynamics (and co-trained LAM or action table). A VQ tokenizer run or a
/// non-diffusion `dynamics` config is an error that says so.
pub fn assemble_diffusion_genie(
    tokenizer_run: &Path,
    actions: ActionSource<'_>,
    dynamics: &DynamicsConfig,
    device: &Device,
) -> Result<(DiffusionGenie, GenieConfig)> {
    if dynamics.kind() != DynamicsKind::DIFFUSION {
        return Err(TrainError::config(
            "model.kind",
            format!("expected `diffusion`, got `{}`", dynamics.kind()),
        ));
    }
    let (tokenizer, tokenizer_cfg) = load_mae_tokenizer(tokenizer_run, device)?;
    let (lam, actions) = resolve_actions(actions, &tokenizer_cfg, dynamics.action_dim, device)?;
    let cfg = GenieConfig { tokenizer: tokenizer_cfg, actions, dynamics: dynamics.clone() };
    let fresh = cfg.init_diffusion(device).map_err(|e| TrainError::config("model", e.to_string()))?;
    let genie = DiffusionGenie { tokenizer, lam: lam.or(fresh.lam), ..fresh }.refreeze(&cfg);
    Ok((genie, cfg))
}

/// Load a diffusion world model from a dynamics run (newest good checkpoint, stored config).
pub fn load_diffusion_genie(run_dir: &Path, device: &Device) -> Result<(DiffusionGenie, GenieConfig, u64)> {
    let (ckpt, cfg) = component_checkpoint::<GenieConfig>(run_dir, DYNAMICS_KIND)?;
    if cfg.dynamics.kind() != DynamicsKind::DIFFUSION {
        return Err(TrainError::checkpoint(
            &ckpt.dir,
            format!("holds {} dynamics, not a diffusion world model", cfg.dynamics.kind()),
        ));
    }
    let model = cfg.init_diffusion(device).map_err(|e| TrainError::checkpoint(&ckpt.dir, e.to_string()))?;
    let genie = ckpt.load_model(model)?.refreeze(&cfg);
    Ok((genie, cfg, ckpt.state.step))
}

#[cfg(test)]
pub(crate) mod tests;
