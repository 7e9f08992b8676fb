//! Causal dynamics (Jasmine's `DynamicsCausal`): no masking; attention is causal over the `N+1`
//! slots of a frame and over frames; slot `n` (the action for `n = 0`, token `n−1`
//! otherwise) is trained to predict token `n` (teacher forcing, next token within the frame).
//!
//! # Information flow (same as the reference)
//!
//! In every layer, slot `n` of frame `t` attends spatially to slots `≤ n` of frame `t` and
//! temporally to slot `n` of frames `≤ t`. By induction over layers, the output at slot `n`
//! of frame `t` depends only on slots `≤ n` of frames `≤ t`, i.e. on the actions into frames
//! `≤ t` and on tokens `0..n−1` of frames `≤ t`. So the prediction of token `n` of frame `t`
//! never sees tokens `n..N−1` of *earlier* frames either, and the prediction of token 0 of
//! any frame depends on actions alone. This is a limitation of the reference design that
//! jinn keeps for parity (a sampler may cache per-slot temporal keys/values because of it);
//! the test `causal_logits_depend_only_on_earlier_slots` checks exactly this property.

use burn::tensor::{Device, Tensor};

/// Loss weights for causal dynamics: every position of every frame `[B, T, N]`.
pub fn all_positions(dims: [usize; 3], device: &Device) -> Tensor<3> {
    Tensor::ones(dims, device)
}
