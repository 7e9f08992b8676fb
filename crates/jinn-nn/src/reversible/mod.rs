//! Reversible ("RSF", reversible scatter flow) blocks and memory-free backprop.
//!
//! - [`coupling`]: additive and bounded-log-scale affine couplings on two feature halves, each
//!   followed by a seeded channel permutation ([`scatter`]).
//! - [`subnet`]: pre-normed sub-networks for the coupling functions (FFN, self-attention,
//!   axial spatial+temporal attention) behind the [`SubNet`] trait.
//! - [`presets`]: the reversible axial block (dynamics backbone), the reversible causal block
//!   (language-model backbone) and FFN couplings, with their configs.
//! - [`engine`]: forward without a tape and block-by-block backward, by reconstruction
//!   (reversible blocks, O(1) activation memory in depth) or from stored block inputs
//!   (gradient checkpointing for any block), with a reconstruction monitor.

pub mod block;
pub mod coupling;
pub mod engine;
pub mod grads;
pub mod presets;
pub mod scatter;
pub mod subnet;

#[cfg(test)]
mod tests;

pub use block::{recompute_vjp, Block, ReverseStep, ReversibleBlock};
pub use coupling::{AdditiveCoupling, AffineCoupling};
pub use engine::{
    backprop_into, forward_standard, Engine, EngineError, Mode, MonitorConfig, MonitorStats, Tape,
};
pub use grads::{accumulate, merge, Lift};
pub use presets::{
    causal_subnets, AdditiveFfnBlock, AffineFfnBlock, FfnCouplingConfig, ReversibleAxialBlock,
    ReversibleAxialConfig, ReversibleCausalBlock, ReversibleCausalConfig,
};
pub use scatter::Scatter;
pub use subnet::{
    AxialAttention, AxialAttentionConfig, Ffn, FfnConfig, KvCache, SelfAttention, SelfAttentionConfig, SubNet,
};
