//! Any trained world model behind one interface, for rollouts and evaluation (`jinn sample`,
//! `jinn eval world`): a token model ([`Genie`]: VQ tokenizer + MaskGIT or causal dynamics)
//! or a diffusion model ([`DiffusionGenie`]: MAE tokenizer + diffusion dynamics).
//!
//! [`load_world`] reads a dynamics run and builds whichever its stored config describes;
//! [`World`] borrows either and offers what rollouts need: encoding frames
//! ([`Encoded`]: tokens or latents), actions, and [`World::rollout`] (sample, then decode).

use crate::diffusion::genie::{load_diffusion_genie, DiffusionGenie};
use crate::diffusion::sample::sample_diffusion;
use crate::dynamics::DynamicsKind;
use crate::genie::{component_checkpoint, load_genie, Genie, GenieConfig, DYNAMICS_KIND};
use crate::sample::{sample, SamplerConfig};
use crate::window::windowed;
use burn::tensor::{Device, Int, Tensor};
use jinn_nn::{NnError, PatchGrid};
use jinn_train::Result;
use std::path::Path;

/// A loaded world model of either family.
// Both variants are whole models of about the same size, held once per loaded model: boxing
// one would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum WorldModel {
    /// VQ tokens with MaskGIT or causal dynamics.
    Tokens(Genie),
    /// MAE latents with diffusion dynamics.
    Diffusion(DiffusionGenie),
}

impl WorldModel {
    /// A borrowed view for rollouts.
    pub fn view(&self) -> World<'_> {
        match self {
            WorldModel::Tokens(g) => World::Tokens(g),
            WorldModel::Diffusion(g) => World::Diffusion(g),
        }
    }
}

/// Load the world model of a dynamics run (newest good checkpoint; the stored config decides
/// the family). Returns the model, its config and the checkpoint's step.
pub fn load_world(run_dir: &Path, device: &Device) -> Result<(WorldModel, GenieConfig, u64)> {
    let (_, cfg) = component_checkpoint::<GenieConfig>(run_dir, DYNAMICS_KIND)?;
    if cfg.dynamics.kind() == DynamicsKind::Diffusion {
        let (g, cfg, step) = load_diffusion_genie(run_dir, device)?;
        return Ok((WorldModel::Diffusion(g), cfg, step));
    }
    let (g, cfg, step) = load_genie(run_dir, device)?;
    Ok((WorldModel::Tokens(g), cfg, step))
}

/// A borrowed world model of either family.
#[derive(Debug, Clone, Copy)]
pub enum World<'a> {
    /// VQ tokens with MaskGIT or causal dynamics.
    Tokens(&'a Genie),
    /// MAE latents with diffusion dynamics.
    Diffusion(&'a DiffusionGenie),
}

impl<'a> From<&'a Genie> for World<'a> {
    fn from(g: &'a Genie) -> Self {
        World::Tokens(g)
    }
}

impl<'a> From<&'a DiffusionGenie> for World<'a> {
    fn from(g: &'a DiffusionGenie) -> Self {
        World::Diffusion(g)
    }
}

impl<'a> From<&'a WorldModel> for World<'a> {
    fn from(m: &'a WorldModel) -> Self {
        m.view()
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

impl World<'_> {
    /// Which dynamics the model has.
    pub fn kind(&self) -> DynamicsKind {
        match self {
            World::Tokens(g) => g.dynamics.kind(),
            World::Diffusion(_) => DynamicsKind::Diffusion,
        }
    }

    /// The patch grid (frame shape) the tokenizer was built for.
    pub fn grid(&self) -> PatchGrid {
        match self {
            World::Tokens(g) => g.tokenizer.grid(),
            World::Diffusion(g) => g.tokenizer.grid(),
        }
    }

    /// The device the model lives on.
    pub fn device(&self) -> Device {
        match self {
            World::Tokens(g) => g.dynamics.token_embed.val().device(),
            World::Diffusion(g) => g.dynamics.level_embed.val().device(),
        }
    }

    /// Whether actions are a LAM's latent actions (else recorded actions are embedded).
    pub fn has_lam(&self) -> bool {
        match self {
            World::Tokens(g) => g.lam.is_some(),
            World::Diffusion(g) => g.lam.is_some(),
        }
    }

    /// Latent actions `[B, T−1, La]` for `videos` (see [`Genie::latent_actions`]), a LAM
    /// seeing at most `window` frames at once (see [`windowed`]; `None`: the whole clip).
    pub fn latent_actions(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        window: Option<usize>,
    ) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError> {
        let whole = |videos: Tensor<5>, actions| match self {
            World::Tokens(g) => g.latent_actions(videos, actions),
            World::Diffusion(g) => g.latent_actions(videos, actions),
        };
        let [b, t, ..] = videos.dims();
        if !self.has_lam() || window.is_none_or(|w| t <= w) {
            return whole(videos, actions);
        }
        // The LAM runs once for the vectors and once for the codes: `windowed` carries one
        // tensor.
        let latent = windowed(videos.clone(), window, |v| Ok(whole(v, None)?.0))?; // [b, t−1, la]
        let ids = windowed(videos, window, |v| {
            let [vb, vt, ..] = v.dims();
            let ids = whole(v, None)?.1.expect("a LAM names its codes"); // [vb·(vt−1)]
            Ok(ids.reshape([vb, vt - 1]))
        })?; // [b, t−1]
        Ok((latent, Some(ids.reshape([b * (t - 1)]))))
    }

    /// The table action ids index `[K, La]`.
    pub fn action_table(&self) -> Tensor<2> {
        match self {
            World::Tokens(g) => g.action_table(),
            World::Diffusion(g) => g.action_table(),
        }
    }

    /// Encode `videos` `[B, T, H, W, C]` in `[0, 1]` (both tokenizers are temporally causal:
    /// the first `t` frames encode the same alone as within the clip).
    pub fn encode(&self, videos: Tensor<5>) -> std::result::Result<Encoded, NnError> {
        Ok(match self {
            World::Tokens(g) => Encoded::Tokens(g.tokenizer.encode(videos)?),
            World::Diffusion(g) => Encoded::Latents(g.tokenizer.encode(videos)?),
        })
    }

    /// Decode `encoded` frames back to `[B, T, H, W, C]` in `[0, 1]` (the tokenizer's
    /// reconstruction).
    pub fn decode(&self, encoded: Encoded) -> std::result::Result<Tensor<5>, NnError> {
        match (self, encoded) {
            (World::Tokens(g), Encoded::Tokens(tokens)) => g.tokenizer.decode(tokens),
            (World::Diffusion(g), Encoded::Latents(latents)) => g.tokenizer.decode(latents),
            _ => Err(NnError::InvalidConfig {
                field: "encoded",
                reason: "encoded frames of the other model family (tokens vs latents)".into(),
            }),
        }
    }

    /// Roll out from the encoded `context` (`C` frames) to `frames` frames under `actions`
    /// `[B, frames−1, La]` with the model's sampler, and decode all frames
    /// `[B, frames, H, W, C]` in `[0, 1]` (the context decoded too). Token models slide over
    /// frames past [`SamplerConfig::window`], in the sampler and the decoder alike.
    pub fn rollout(
        &self,
        context: Encoded,
        actions: Tensor<3>,
        frames: usize,
        cfg: &SamplerConfig,
    ) -> std::result::Result<Tensor<5>, NnError> {
        match (self, context) {
            (World::Tokens(g), Encoded::Tokens(tokens)) => {
                let device = tokens.device();
                let rollout = sample(&g.dynamics, tokens, actions, frames, cfg)?;
                windowed(rollout.token_tensor(&device), cfg.window, |t| g.tokenizer.decode(t))
            }
            (World::Diffusion(g), Encoded::Latents(latents)) => {
                let latents = sample_diffusion(&g.dynamics, latents, actions, frames, cfg)?;
                g.tokenizer.decode(latents)
            }
            _ => Err(NnError::InvalidConfig {
                field: "context",
                reason: "encoded frames of the other model family (tokens vs latents)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
