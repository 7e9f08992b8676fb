//! [`DiffusionGenie`] as a [`World`]: MAE latents with diffusion dynamics, sampled by
//! [`sample_diffusion`].

use super::genie::DiffusionGenie;
use super::sample::sample_diffusion;
use crate::dynamics_kinds::DynamicsKind;
use crate::sample::SamplerConfig;
use crate::world_model::{genie_world_parts, other_family, Encoded, World};
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

    fn encode(&self, videos: Tensor<5>) -> Result<Encoded, NnError> {
        Ok(Encoded::Latents(self.tokenizer.encode(videos)?))
    }

    fn decode(&self, encoded: Encoded) -> Result<Tensor<5>, NnError> {
        match encoded {
            Encoded::Latents(latents) => self.tokenizer.decode(latents),
            Encoded::Tokens(_) => Err(other_family("encoded")),
        }
    }

    fn rollout(
        &self,
        context: Encoded,
        actions: Tensor<3>,
        frames: usize,
        cfg: &SamplerConfig,
    ) -> Result<Tensor<5>, NnError> {
        let Encoded::Latents(latents) = context else {
            return Err(other_family("context"));
        };
        let latents = sample_diffusion(&self.dynamics, latents, actions, frames, cfg)?;
        self.tokenizer.decode(latents)
    }
}
