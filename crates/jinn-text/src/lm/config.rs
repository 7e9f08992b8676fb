//! The language model's architecture settings (the `model` section of an LM run config).

use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};

/// Which stack sits between the embedding and the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// Reversible RSF blocks on a doubled stream (the embedding copied into both halves).
    Rsf,
    /// A standard pre-norm transformer (the baseline; same parameter count as `Rsf`).
    Standard,
}

/// How an RSF-LM computes its gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backprop {
    /// Memory-free: rebuild every block's input from its output during the backward.
    Reconstruct,
    /// Ordinary autodiff through the whole stack (activation memory grows with depth).
    Standard,
}

/// Architecture of a [`crate::lm::LanguageModel`]. The vocabulary size comes from the
/// tokenizer, not from here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LmModelConfig {
    /// `rsf` or `standard`.
    pub arch: Arch,
    /// Embedding width `w`. An RSF-LM runs its blocks on a `2w` stream whose halves have
    /// width `w`, so both architectures have blocks of width `w` and equal parameter counts.
    pub d_model: usize,
    /// Number of blocks.
    pub depth: usize,
    /// Attention heads per block (divides `d_model`; the head width must be even for rotary).
    pub num_heads: usize,
    /// FFN hidden width.
    pub d_ffn: usize,
    /// Longest sequence (training window, prompt plus generated tokens).
    pub max_seq: usize,
    /// `reconstruct` (memory-free) or `standard` backprop (RSF only).
    pub backprop: Backprop,
}

impl Default for LmModelConfig {
    /// A small RSF-LM for 2 CPU cores.
    fn default() -> Self {
        LmModelConfig {
            arch: Arch::Rsf,
            d_model: 128,
            depth: 4,
            num_heads: 4,
            d_ffn: 512,
            max_seq: 256,
            backprop: Backprop::Reconstruct,
        }
    }
}

impl LmModelConfig {
    /// Check the fields; errors name them (`model.…`).
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("model.d_model", self.d_model),
            ("model.depth", self.depth),
            ("model.num_heads", self.num_heads),
            ("model.d_ffn", self.d_ffn),
            ("model.max_seq", self.max_seq),
        ];
        for (field, v) in positive {
            if v == 0 {
                return Err(TrainError::config(field, "must be ≥ 1"));
            }
        }
        if !self.d_model.is_multiple_of(self.num_heads) {
            return Err(TrainError::config(
                "model.num_heads",
                format!("must divide model.d_model = {}, got {}", self.d_model, self.num_heads),
            ));
        }
        let head = self.d_model / self.num_heads;
        if !head.is_multiple_of(2) {
            return Err(TrainError::config(
                "model.num_heads",
                format!("rotary embeddings need an even head width; d_model / num_heads = {head}"),
            ));
        }
        Ok(())
    }
}
