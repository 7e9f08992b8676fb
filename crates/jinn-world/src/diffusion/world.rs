//! [`DiffusionGenie`] as a [`World`]: MAE latents with diffusion dynamics, sampled by
//! [`sample_diffusion`].

use super::genie::DiffusionGenie;
use super::sample::sample_diffusion;
use crate::dynamics_kinds::DynamicsKind;
use crate::sample::SamplerConfig;
use crate::window::windowed;
use crate::world_model::{genie_world_parts, Encoded, World};
use burn::tensor::{Device, Tensor};
use jinn_nn::NnError;

impl World for DiffusionGenie {
    fn kind(&self) -> DynamicsKind {
        DynamicsKind::DIFFUSION
    }

    fn device(&self) -> Device {
        self.dynamics.level_embed.val().device()
    }

    genie_world_parts!();

    fn encode(&self, videos: Tensor<5>, window: Option<usize>) -> Result<Encoded, NnError> {
        Ok(Encoded::Latents(windowed(videos, window, |v| self.tokenizer.encode(v))?))
    }

    fn decode(&self, encoded: Encoded, window: Option<usize>) -> Result<Tensor<5>, NnError> {
        windowed(encoded.into_latents("encoded")?, window, |l| self.tokenizer.decode(l))
    }

    fn rollout(
        &self,
        context: Encoded,
        actions: Tensor<3>,
        frames: usize,
        cfg: &SamplerConfig,
    ) -> Result<Tensor<5>, NnError> {
        let latents =
            sample_diffusion(&self.dynamics, context.into_latents("context")?, actions, frames, cfg)?;
        self.decode(Encoded::Latents(latents), cfg.window)
    }
}
