//! Any trained world model behind one interface, for rollouts and evaluation (`jinn sample`,
//! `jinn eval world`): the [`World`] trait, which each dynamics kind's world model implements
//! (a token model, [`crate::Genie`]: VQ tokenizer + MaskGIT or causal dynamics; a diffusion
//! model, [`crate::DiffusionGenie`]: MAE tokenizer + diffusion dynamics).
//!
//! [`load_world`] reads a dynamics run and builds whichever its stored config's kind
//! describes, through that kind's row of [`crate::dynamics_kinds::DYNAMICS_KINDS`]. A
//! [`World`] offers what rollouts need: encoding frames ([`Encoded`]: tokens or latents),
//! actions, and [`World::rollout`] (sample, then decode).

use crate::dynamics_kinds::DynamicsKind;
use crate::genie::{component_checkpoint, GenieConfig, DYNAMICS_KIND};
use crate::sample::SamplerConfig;
use crate::window::windowed;
use burn::tensor::{Device, Int, Tensor};
use jinn_nn::{NnError, PatchGrid};
use jinn_train::Result;
use std::path::Path;

/// A loaded world model of any kind.
pub type WorldModel = Box<dyn World>;

/// Load the world model of a dynamics run (newest good checkpoint; the stored config's kind
/// decides which). Returns the model, its config and the checkpoint's step.
pub fn load_world(run_dir: &Path, device: &Device) -> Result<(WorldModel, GenieConfig, u64)> {
    let (_, cfg) = component_checkpoint::<GenieConfig>(run_dir, DYNAMICS_KIND)?;
    (cfg.dynamics.kind().entry().load_world)(run_dir, device)
}

/// What rollouts and evaluation need from a world model, whatever its kind.
pub trait World: std::fmt::Debug {
    /// Which dynamics the model has.
    fn kind(&self) -> DynamicsKind;

    /// The patch grid (frame shape) the tokenizer was built for.
    fn grid(&self) -> PatchGrid;

    /// The device the model lives on.
    fn device(&self) -> Device;

    /// Whether actions are a LAM's latent actions (else recorded actions are embedded).
    fn has_lam(&self) -> bool;

    /// Latent actions `[B, T−1, La]` for the whole clip `videos` and, with a LAM, its code ids
    /// `[B·(T−1)]` (see [`crate::Genie::latent_actions`]).
    fn clip_latent_actions(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
    ) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError>;

    /// The table action ids index `[K, La]`.
    fn action_table(&self) -> Tensor<2>;

    /// Encode `videos` `[B, T, H, W, C]` in `[0, 1]`, the tokenizer seeing at most `window`
    /// frames at once (see [`windowed`]; `None`: the whole clip). The tokenizers are
    /// temporally causal: the first `t` frames encode the same alone as within the clip.
    fn encode(&self, videos: Tensor<5>, window: Option<usize>) -> std::result::Result<Encoded, NnError>;

    /// Decode `encoded` frames back to `[B, T, H, W, C]` in `[0, 1]` (the tokenizer's
    /// reconstruction), seeing at most `window` frames at once.
    fn decode(&self, encoded: Encoded, window: Option<usize>) -> std::result::Result<Tensor<5>, NnError>;

    /// Roll out from the encoded `context` (`C` frames) to `frames` frames under `actions`
    /// `[B, frames−1, La]` with the model's sampler, and decode all frames
    /// `[B, frames, H, W, C]` in `[0, 1]` (the context decoded too). Token models' samplers
    /// slide over frames past [`SamplerConfig::window`]; every decoder does.
    fn rollout(
        &self,
        context: Encoded,
        actions: Tensor<3>,
        frames: usize,
        cfg: &SamplerConfig,
    ) -> std::result::Result<Tensor<5>, NnError>;

    /// Latent actions `[B, T−1, La]` for `videos` (see [`World::clip_latent_actions`]), a LAM
    /// seeing at most `window` frames at once (see [`windowed`]; `None`: the whole clip).
    fn latent_actions(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        window: Option<usize>,
    ) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError> {
        let [b, t, ..] = videos.dims();
        if !self.has_lam() || window.is_none_or(|w| t <= w) {
            return self.clip_latent_actions(videos, actions);
        }
        // The LAM runs once for the vectors and once for the codes: `windowed` carries one
        // tensor.
        let latent = windowed(videos.clone(), window, |v| Ok(self.clip_latent_actions(v, None)?.0))?; // [b, t−1, la]
        let ids = windowed(videos, window, |v| {
            let [vb, vt, ..] = v.dims();
            let ids = self.clip_latent_actions(v, None)?.1.expect("a LAM names its codes"); // [vb·(vt−1)]
            Ok(ids.reshape([vb, vt - 1]))
        })?; // [b, t−1]
        Ok((latent, Some(ids.reshape([b * (t - 1)]))))
    }
}

/// The [`World`] methods of a Genie-shaped world model (fields `tokenizer` and `lam`, and its
/// own `latent_actions` and `action_table`), which token and diffusion models share.
macro_rules! genie_world_parts {
    () => {
        fn grid(&self) -> jinn_nn::PatchGrid {
            self.tokenizer.grid()
        }

        fn has_lam(&self) -> bool {
            self.lam.is_some()
        }

        fn clip_latent_actions(
            &self,
            videos: burn::tensor::Tensor<5>,
            actions: Option<burn::tensor::Tensor<2, burn::tensor::Int>>,
        ) -> Result<
            (burn::tensor::Tensor<3>, Option<burn::tensor::Tensor<1, burn::tensor::Int>>),
            jinn_nn::NnError,
        > {
            Self::latent_actions(self, videos, actions)
        }

        fn action_table(&self) -> burn::tensor::Tensor<2> {
            Self::action_table(self)
        }
    };
}
pub(crate) use genie_world_parts;

/// The error of a world model handed frames encoded by another model family.
fn other_family(field: &'static str) -> NnError {
    NnError::InvalidConfig {
        field,
        reason: "encoded frames of the other model family (tokens vs latents)".into(),
    }
}

/// Frames as the dynamics see them.
#[derive(Debug, Clone)]
pub enum Encoded {
    /// VQ code indices `[B, T, N]`.
    Tokens(Tensor<3, Int>),
    /// MAE latents `[B, T, N, L]`.
    Latents(Tensor<4>),
}

impl Encoded {
    /// The token ids of VQ-encoded frames; latents are an error naming `field`.
    pub fn into_tokens(self, field: &'static str) -> std::result::Result<Tensor<3, Int>, NnError> {
        match self {
            Encoded::Tokens(tokens) => Ok(tokens),
            Encoded::Latents(_) => Err(other_family(field)),
        }
    }

    /// The latents of MAE-encoded frames; tokens are an error naming `field`.
    pub fn into_latents(self, field: &'static str) -> std::result::Result<Tensor<4>, NnError> {
        match self {
            Encoded::Latents(latents) => Ok(latents),
            Encoded::Tokens(_) => Err(other_family(field)),
        }
    }

    /// The first `t` frames.
    pub fn first_frames(&self, t: usize) -> Encoded {
        match self {
            Encoded::Tokens(x) => {
                let [b, _, n] = x.dims();
                Encoded::Tokens(x.clone().slice([0..b, 0..t, 0..n]))
            }
            Encoded::Latents(x) => {
                let [b, _, n, l] = x.dims();
                Encoded::Latents(x.clone().slice([0..b, 0..t, 0..n, 0..l]))
            }
        }
    }
}

#[cfg(test)]
mod tests;
