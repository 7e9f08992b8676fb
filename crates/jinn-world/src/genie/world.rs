//! [`Genie`] as a [`World`]: VQ tokens with MaskGIT or causal dynamics, sampled by
//! [`crate::sample::sample`].

use super::Genie;
use crate::dynamics_kinds::DynamicsKind;
use crate::sample::{sample, SamplerConfig};
use crate::window::windowed;
use crate::world_model::{genie_world_parts, Encoded, World};
use burn::tensor::{Device, Tensor};
use jinn_nn::NnError;

impl World for Genie {
    fn kind(&self) -> DynamicsKind {
        self.dynamics.kind()
    }

    fn device(&self) -> Device {
        self.dynamics.token_embed.val().device()
    }

    genie_world_parts!();

    fn encode(&self, videos: Tensor<5>, window: Option<usize>) -> Result<Encoded, NnError> {
        Ok(Encoded::Tokens(windowed(videos, window, |v| self.tokenizer.encode(v))?))
    }

    fn decode(&self, encoded: Encoded, window: Option<usize>) -> Result<Tensor<5>, NnError> {
        windowed(encoded.into_tokens("encoded")?, window, |t| self.tokenizer.decode(t))
    }

    fn rollout(
        &self,
        context: Encoded,
        actions: Tensor<3>,
        frames: usize,
        cfg: &SamplerConfig,
    ) -> Result<Tensor<5>, NnError> {
        let tokens = context.into_tokens("context")?;
        let device = tokens.device();
        let rollout = sample(&self.dynamics, tokens, actions, frames, cfg)?;
        self.decode(Encoded::Tokens(rollout.token_tensor(&device)), cfg.window)
    }
}
