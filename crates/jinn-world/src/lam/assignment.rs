//! Hindsight code assignment for [`CodeAssignment::Reconstruction`](super::CodeAssignment):
//! every transition takes the code whose decoder prediction of it is best, and the encoder
//! learns to name that code.

use super::{Lam, LamDecoder};
use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};
use jinn_nn::ops::linear_rows;
use jinn_nn::VectorQuantizer;

/// Temperature of the encoder's code classifier: its logits are cosine similarities (in
/// `[−1, 1]`) divided by this, so a confident choice needs codes a few tenths of a cosine apart.
pub const ASSIGNMENT_TEMPERATURE: f64 = 0.1;

impl Lam {
    /// The code `[B·(T−1)]` whose prediction of each transition has the least squared error.
    ///
    /// `frames_in` `[B, T−1, N, M]` are the decoder's projected context patches, `context`
    /// `[B, T−1, N, P]` the context patches and `target` `[B, T−1, N, P]` the patches to
    /// predict. The decoder runs once on a batch `K` times as large, every transition of copy
    /// `k` given code `k`; nothing here takes gradients. Ties go to the lower code.
    pub(super) fn best_codes(
        &self,
        decoder: &LamDecoder,
        frames_in: Tensor<4>,
        context: Tensor<4>,
        target: Tensor<4>,
    ) -> Tensor<1, Int> {
        let k = self.num_codes();
        let [b, tm1, n, m] = frames_in.dims();
        let p = target.dims()[3];
        let device = frames_in.device();
        // Off the autodiff backend: no graph is recorded, so no activations are kept.
        let decoder = decoder.valid();
        let codes = linear_rows(&decoder.action_up, self.vq.codebook.val().inner()); // [k, m]
        let frames_in = frames_in.inner().reshape([1, b * tm1, n, m]); // [1, b·(t−1), n, m]
        let x = frames_in + codes.reshape([k, 1, 1, m]); // [k, b·(t−1), n, m]
        let x = x.reshape([k * b, tm1, n, m]); // [k·b, t−1, n, m]
        let context = context.inner().repeat(&[k, 1, 1, 1]); // [k·b, t−1, n, p]
        let pred = self.decode(&decoder, x, context); // [k·b, t−1, n, p]
        let target = target.inner().repeat(&[k, 1, 1, 1]); // [k·b, t−1, n, p]
        let error = (pred - target).powi_scalar(2).reshape([k, b * tm1, n * p]).sum_dim(2); // [k, b·(t−1), 1]
        let error = error.reshape([k, b * tm1]).transpose(); // [b·(t−1), k]
        error.argmin(1).reshape([b * tm1]).to_device(&device) // [b·(t−1)]
    }
}

/// Mean cross-entropy of the encoder's code classifier (cosine similarities of `emb`
/// `[D, L]` to the codes over [`ASSIGNMENT_TEMPERATURE`]) against the assigned codes `[D]`;
/// gradients reach the encoder and the codebook.
pub(super) fn cross_entropy(vq: &VectorQuantizer, emb: Tensor<2>, assigned: Tensor<1, Int>) -> Tensor<1> {
    let d = emb.dims()[0];
    let logits = vq.cosine_similarities(emb) / ASSIGNMENT_TEMPERATURE; // [d, k]
    let logp = log_softmax(logits, 1); // [d, k]
    logp.gather(1, assigned.reshape([d, 1])).mean().neg()
}
