//! Axial-transformer outputs for one spatial slot only. The LAM reads nothing but its action
//! slot from the encoder, so the last block need not compute the other tokens: their queries,
//! temporal attention, FFN and head are dead work (≈ 18 % of a LAM training step's matmul work
//! at jasmine-small, see `jinn_nn::flops`). Every earlier block still runs in full, and the last
//! block's keys and values still come from every token.

use crate::axial::{AxialBlock, AxialTransformer};
use burn::tensor::Tensor;

impl AxialBlock {
    /// [`AxialBlock::forward`] at spatial slot `slot` only: `x` `[B, T, N, M]` → `[B, T, 1, M]`.
    /// The slot's spatial query sees the tokens it may see; its temporal attention and FFN are
    /// those of the full block on the slot's own sequence.
    pub fn forward_at_slot(&self, x: Tensor<4>, slot: usize) -> Tensor<4> {
        let [b, t, n, m] = x.dims();
        assert!(slot < n, "slot {slot} of {n} tokens");
        let at_slot = x.clone().slice([0..b, 0..t, slot..slot + 1, 0..m]); // [b, t, 1, m]
        let x = at_slot + self.spatial().over_tokens_at(x, slot); // [b, t, 1, m]
        let x = x.clone() + self.temporal().over_frames(x); // [b, t, 1, m]
        x.clone() + self.ffn().apply(x) // [b, t, 1, m]
    }
}

impl AxialTransformer {
    /// [`AxialTransformer::forward`] at spatial slot `slot` only: `x` `[B, T, N, I]` →
    /// `[B, T, 1, O]`.
    pub fn forward_at_slot(&self, x: Tensor<4>, slot: usize) -> Tensor<4> {
        let [b, t, n, _] = x.dims();
        assert!(slot < n, "slot {slot} of {n} tokens");
        let mut x = self.stem(x); // [b, t, n, m]
        let Some((last, earlier)) = self.blocks.split_last() else {
            let m = x.dims()[3];
            return self.head(x.slice([0..b, 0..t, slot..slot + 1, 0..m])); // [b, t, 1, o]
        };
        for block in earlier {
            x = block.forward(x); // [b, t, n, m]
        }
        self.head(last.forward_at_slot(x, slot)) // [b, t, 1, o]
    }
}

#[cfg(test)]
mod tests {
    use crate::axial::{AxialTransformer, AxialTransformerConfig};
    use crate::test_util::to_vec;
    use burn::tensor::{Device, Distribution, Tensor};

    #[test]
    fn slot_outputs_equal_the_full_forward_at_that_slot() {
        let device = Device::flex();
        let [b, t, n] = [2, 4, 5];
        for spatial_causal in [false, true] {
            for blocks in [0, 1, 2] {
                let model = AxialTransformerConfig::new(6, 16, 32, 3, blocks, 4)
                    .with_spatial_causal(spatial_causal)
                    .init(&device)
                    .unwrap();
                let x = Tensor::<4>::random([b, t, n, 6], Distribution::Normal(0.0, 1.0), &device);
                let full = model.forward(x.clone()); // [b, t, n, 3]
                for slot in [0, 2, n - 1] {
                    let want = to_vec(full.clone().slice([0..b, 0..t, slot..slot + 1, 0..3]));
                    let got = model.forward_at_slot(x.clone(), slot);
                    assert_eq!(got.dims(), [b, t, 1, 3]);
                    for (g, w) in to_vec(got).iter().zip(&want) {
                        assert!(
                            (g - w).abs() < 1e-5,
                            "causal {spatial_causal}, {blocks} blocks, slot {slot}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    /// Gradients of the input, of a first-block weight and of the last block's spatial keys (the
    /// projection the slot path still runs for every token), causal and not.
    #[test]
    fn slot_gradients_equal_those_of_the_full_forward() {
        let device = Device::flex().autodiff();
        for (spatial_causal, slot) in [(false, 0), (true, 2)] {
            let model = AxialTransformerConfig::new(6, 16, 32, 3, 2, 4)
                .with_spatial_causal(spatial_causal)
                .init(&device)
                .unwrap();
            check_gradients(&model, slot, &device);
        }
    }

    fn check_gradients(model: &AxialTransformer, slot: usize, device: &Device) {
        let [b, t, n] = [2, 3, 4];
        let x = Tensor::<4>::random([b, t, n, 6], Distribution::Normal(0.0, 1.0), device);
        let w = Tensor::<4>::random([b, t, 1, 3], Distribution::Normal(0.0, 1.0), device);
        let grads_of = |slot_only: bool| {
            let x = x.clone().detach().require_grad();
            let out = if slot_only {
                model.forward_at_slot(x.clone(), slot)
            } else {
                model.forward(x.clone()).slice([0..b, 0..t, slot..slot + 1, 0..3])
            };
            let grads = (out * w.clone()).sum().backward();
            let gx = to_vec(x.grad(&grads).unwrap());
            let gw = to_vec(model.blocks[0].ffn_in.weight.val().grad(&grads).unwrap());
            let gk = to_vec(model.blocks[1].attn_spatial.key.weight.val().grad(&grads).unwrap());
            [gx, gw, gk]
        };
        for (got, want) in grads_of(true).iter().zip(&grads_of(false)) {
            assert!(want.iter().any(|v| *v != 0.0));
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-4, "slot {slot}: {g} vs {w}");
            }
        }
    }
}
