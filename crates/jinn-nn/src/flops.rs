//! Multiply-accumulate (MAC) counts of forward passes, read from the layers' weights: the dense
//! layers and the attention matmuls, the work that bounds a step from below (a roofline's
//! compute side). `jinn bench train` turns them into a step's FLOPs and a time
//! floor. The axial counts are sums of the per-sub-layer counts in [`crate::axial_step`]; the
//! tests check them against the work the forward passes really run (a tally kept by the dense
//! layers and attention matmuls in test builds).

use crate::attention::MultiHeadAttention;
use crate::axial::{AxialBlock, AxialTransformer};
use burn::nn::Linear;

/// MACs of the dense layer `linear` (`[I, O]` weight) applied to `rows` rows.
pub fn dense_macs(linear: &Linear, rows: usize) -> u64 {
    let [d_in, d_out] = linear.weight.dims();
    rows as u64 * d_in as u64 * d_out as u64
}

/// MACs of the two attention matmuls (`Q·Kᵀ` and `softmax·V`) of `sequences` sequences of
/// `len` tokens at width `d_model`. Causal attention is counted in full: Burn's attention
/// computes every score and then masks the hidden half.
pub fn attention_macs(sequences: usize, len: usize, d_model: usize) -> u64 {
    attend_macs(sequences, len, len, d_model)
}

/// MACs of the two attention matmuls of `sequences` sequences of `queries` query rows over
/// `keys` key rows at width `d_model` (all heads together).
pub fn attend_macs(sequences: usize, queries: usize, keys: usize, d_model: usize) -> u64 {
    2 * (sequences * queries * keys) as u64 * d_model as u64
}

/// MACs of `attn` on `batch` sequences of `queries` query rows attending to `keys` rows (whose
/// keys and values it projects): the four `M → M` projections and the attention matmuls.
pub fn attention_layer_macs(attn: &MultiHeadAttention, batch: usize, queries: usize, keys: usize) -> u64 {
    let m = attn.query.weight.dims()[0];
    dense_macs(&attn.query, batch * queries)
        + dense_macs(&attn.key, batch * keys)
        + dense_macs(&attn.value, batch * keys)
        + attend_macs(batch, queries, keys, m)
        + dense_macs(&attn.output, batch * queries)
}

impl AxialBlock {
    /// MACs of [`AxialBlock::forward`] on `[B, T, N, M]`: its three sub-layers.
    pub fn forward_macs(&self, shape: [usize; 3]) -> u64 {
        let [b, t, n] = shape;
        self.spatial().over_tokens_macs(shape)
            + self.temporal().over_frames_macs(shape)
            + self.ffn().macs(b * t * n)
    }

    /// MACs of [`AxialBlock::forward_at_slot`] on `[B, T, N, M]`: the slot's spatial query
    /// against the tokens it sees, then the slot's temporal attention and FFN.
    pub fn forward_at_slot_macs(&self, [b, t, n]: [usize; 3], slot: usize) -> u64 {
        self.spatial().over_tokens_at_macs([b, t, n], slot)
            + self.temporal().over_frames_macs([b, t, 1])
            + self.ffn().macs(b * t)
    }
}

impl AxialTransformer {
    /// MACs of one forward pass on an input `[B, T, N, I]` (`shape` = `[B, T, N]`): the stem
    /// `I → M`, the blocks and the head `M → O`.
    pub fn forward_macs(&self, shape: [usize; 3]) -> u64 {
        let [b, t, n] = shape;
        let blocks: u64 = self.blocks.iter().map(|block| block.forward_macs(shape)).sum();
        dense_macs(&self.proj_in, b * t * n) + blocks + dense_macs(&self.proj_out, b * t * n)
    }

    /// MACs of [`AxialTransformer::forward_at_slot`] on `[B, T, N, I]`: the stem and all blocks
    /// but the last in full, the last block and the head for the slot only.
    pub fn forward_at_slot_macs(&self, shape: [usize; 3], slot: usize) -> u64 {
        let [b, t, n] = shape;
        let blocks: u64 = match self.blocks.split_last() {
            Some((last, earlier)) => {
                earlier.iter().map(|block| block.forward_macs(shape)).sum::<u64>()
                    + last.forward_at_slot_macs(shape, slot)
            }
            None => 0,
        };
        dense_macs(&self.proj_in, b * t * n) + blocks + dense_macs(&self.proj_out, b * t)
    }
}

#[cfg(test)]
mod tests {
    use crate::axial::AxialTransformerConfig;
    use crate::mac_tally::count;
    use burn::tensor::{Device, Distribution, Tensor};

    /// The count written out from the config's widths: stem `I·M`, per block `8·M²`
    /// projections, `2·M·D` FFN, attention `2·N·M` per token spatially and `2·T·M` temporally,
    /// head `M·O`, all per token.
    fn closed_form(cfg: &AxialTransformerConfig, [b, t, n]: [usize; 3]) -> u64 {
        let (i, m, d, o) = (cfg.d_input, cfg.d_model, cfg.d_ffn, cfg.d_output);
        let per_block = 8 * m * m + 2 * m * d + 2 * n * m + 2 * t * m;
        ((b * t * n) * (i * m + cfg.num_blocks * per_block + m * o)) as u64
    }

    /// Attention MACs counted by brute force: per sequence, per query and key, a score and a
    /// value row of width `m`.
    fn attention_macs_by_loops(sequences: usize, len: usize, m: usize) -> u64 {
        let mut macs = 0u64;
        for _ in 0..sequences {
            for _query in 0..len {
                for _key in 0..len {
                    macs += 2 * m as u64;
                }
            }
        }
        macs
    }

    #[test]
    fn forward_macs_of_a_built_model_match_the_closed_form() {
        let device = Device::default();
        for (cfg, shape) in [
            (AxialTransformerConfig::new(12, 16, 40, 7, 3, 4), [2, 5, 9]),
            (AxialTransformerConfig::new(8, 16, 32, 8, 0, 2), [1, 3, 5]),
            (AxialTransformerConfig::new(3, 8, 8, 3, 1, 1), [4, 1, 1]),
        ] {
            let model = cfg.init(&device).unwrap();
            assert_eq!(model.forward_macs(shape), closed_form(&cfg, shape), "{cfg:?} on {shape:?}");
        }
    }

    #[test]
    fn slot_macs_match_the_closed_form() {
        let device = Device::default();
        let (i, m, d, o) = (12, 16, 40, 7);
        let [b, t, n] = [2, 5, 9];
        for blocks in [0, 1, 3] {
            for (causal, slot, seen) in [(false, 0, n), (true, 3, 4)] {
                let cfg = AxialTransformerConfig::new(i, m, d, o, blocks, 4).with_spatial_causal(causal);
                let model = cfg.init(&device).unwrap();
                let (rows, slot_rows) = ((b * t * n) as u64, (b * t) as u64);
                let expected = if blocks == 0 {
                    rows * (i * m) as u64 + slot_rows * (m * o) as u64
                } else {
                    let earlier = AxialTransformerConfig::new(i, m, d, o, blocks - 1, 4);
                    // Earlier blocks in full, no head; then the last block for the slot.
                    let last = slot_rows * (2 * m * m + 2 * seen * m + 4 * m * m + 2 * m * d + m * o) as u64
                        + (b * t * seen * 2 * m * m) as u64
                        + (2 * b * t * t * m) as u64;
                    closed_form(&earlier, [b, t, n]) - rows * (m * o) as u64 + last
                };
                assert_eq!(
                    model.forward_at_slot_macs([b, t, n], slot),
                    expected,
                    "{blocks} blocks, causal {causal}"
                );
            }
        }
    }

    /// The formulas against the MACs the forward passes really run (the dense layers' and
    /// attention matmuls' tally), whole-clip and at a slot, with full and causal spatial
    /// attention, autodiff or not (the packed and unpacked projection paths).
    #[test]
    fn forward_macs_equal_the_work_the_forward_runs() {
        for device in [Device::flex(), Device::flex().autodiff()] {
            for (blocks, causal, [b, t, n]) in
                [(0, false, [1, 2, 3]), (1, true, [2, 3, 4]), (2, false, [1, 4, 5])]
            {
                let cfg = AxialTransformerConfig::new(6, 8, 12, 5, blocks, 2).with_spatial_causal(causal);
                let model = cfg.init(&device).unwrap();
                let x = Tensor::<4>::random([b, t, n, 6], Distribution::Normal(0.0, 1.0), &device);
                let (_, ran) = count(|| model.forward(x.clone()));
                assert_eq!(ran, model.forward_macs([b, t, n]), "{blocks} blocks, causal {causal}");
                for slot in [0, n - 1] {
                    let (_, ran) = count(|| model.forward_at_slot(x.clone(), slot));
                    let formula = model.forward_at_slot_macs([b, t, n], slot);
                    assert_eq!(ran, formula, "{blocks} blocks, causal {causal}, slot {slot}");
                }
            }
        }
    }

    #[test]
    fn attention_macs_match_a_brute_force_count() {
        for (sequences, len, m) in [(1, 1, 1), (3, 7, 5), (10, 17, 16)] {
            assert_eq!(super::attention_macs(sequences, len, m), attention_macs_by_loops(sequences, len, m));
        }
    }
}
