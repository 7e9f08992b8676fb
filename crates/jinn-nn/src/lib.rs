//! Neural building blocks of jinn's Genie-style world model, on Burn 0.22, following Jasmine's
//! `jasmine/utils/nn.py` and `jasmine/utils/preprocess.py`: patchify, sinusoidal positional encoding,
//! multi-head attention, the axial (spatio-temporal) transformer and the vector quantiser.
//!
//! Everything runs on a runtime [`burn::tensor::Device`] (CPU `Device::flex()` by default;
//! `wgpu` with the crate feature). Shapes use the spec's letters: B batch, T frames,
//! N tokens per frame, P patch length, M model width, D FFN width, L code width, K codes.

#![warn(missing_docs)]

pub mod attention;
pub mod axial;
pub mod axial_cache;
pub mod axial_slot;
pub mod axial_step;
pub mod error;
pub mod flops;
pub mod init;
pub mod ops;
pub mod patch;
pub mod position;
pub mod reversible;
pub mod vq;
pub mod warm_pool;

#[cfg(test)]
mod mac_tally;
#[cfg(test)]
mod params;
#[cfg(test)]
mod test_util;

pub use attention::{MultiHeadAttention, MultiHeadAttentionConfig};
pub use axial::{AxialBlock, AxialBlockConfig, AxialTransformer, AxialTransformerConfig};
pub use axial_cache::{stem_rows, AxialKvCache};
pub use axial_step::{AttentionStep, FfnStep};
pub use error::NnError;
pub use patch::{patchify, unpatchify, PatchGrid};
pub use position::{add_spatiotemporal_pe, sinusoid_table};
pub use vq::{
    CodeReset, CodeUsage, DeadCodeTracker, ResetTarget, VectorQuantizer, VectorQuantizerConfig, VqOutput,
    VQ_BETA,
};
