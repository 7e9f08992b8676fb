//! The MAE tokenizer's config (a tokenizer run config's `model` section with `kind = "mae"`,
//! see [`crate::tokenizer::TokenizerConfig`]).

use crate::mae::MaeTokenizer;
use crate::tokenizer::CoderConfig;
use burn::tensor::{Device, Distribution};
use jinn_nn::init::{host_random, lazy_param};
use jinn_nn::NnError;
use serde::{Deserialize, Serialize};

/// Architecture of a [`MaeTokenizer`]: the [`CoderConfig`] defaults and Jasmine's mask ratio
/// bound 0.9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MaeConfig {
    /// Frames and encoder/decoder shapes (flattened into the section).
    #[serde(flatten)]
    pub coder: CoderConfig,
    /// In training each frame's patches are masked with a ratio drawn from
    /// `U[0, max_mask_ratio)` (Jasmine 0.9), in `[0, 1)`.
    pub max_mask_ratio: f64,
}

impl Default for MaeConfig {
    fn default() -> Self {
        MaeConfig { coder: CoderConfig::default(), max_mask_ratio: 0.9 }
    }
}

impl MaeConfig {
    /// Build the MAE tokenizer. The mask patch is drawn from `U(−√3, √3)` (flax's LeCun
    /// uniform with fan_in 1), the transformers as for the VQ tokenizer.
    pub fn init(&self, device: &Device) -> Result<MaeTokenizer, NnError> {
        if !(0.0..1.0).contains(&self.max_mask_ratio) {
            return Err(NnError::InvalidConfig {
                field: "max_mask_ratio",
                reason: format!("must be in [0, 1), got {}", self.max_mask_ratio),
            });
        }
        let c = &self.coder;
        let grid = c.grid()?;
        let p = grid.patch_dim();
        let bound = 3f64.sqrt();
        Ok(MaeTokenizer {
            encoder: c.encoder(p, device)?,
            decoder: c.decoder(p, device)?,
            mask_patch: lazy_param([p], device, move |d| {
                host_random([p], Distribution::Uniform(-bound, bound), d)
            }),
            patch: c.patch,
            height: c.height,
            width: c.width,
            channels: c.channels,
            max_mask_ratio: self.max_mask_ratio,
        })
    }
}
