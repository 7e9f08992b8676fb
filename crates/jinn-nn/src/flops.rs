//! Multiply-accumulate (MAC) counts of forward passes, read from the layers' weights: the dense
//! layers and the attention matmuls, the work that bounds a step from below (a roofline's
//! compute side). `jinn bench train` turns them into a step's FLOPs and a time
//! floor. Written here because the counts follow this crate's own layer layout.

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
    2 * sequences as u64 * (len * len) as u64 * d_model as u64
}

/// MACs of one axial block on `[B, T, N, M]`: the spatial and temporal attention (four
/// `M → M` projections each, plus their score and value matmuls) and the FFN `M → D → M`.
fn block_macs(block: &AxialBlock, [b, t, n]: [usize; 3]) -> u64 {
    let rows = b * t * n;
    let m = block.ffn_in.weight.dims()[0];
    let projections: u64 = [&block.attn_spatial, &block.attn_temporal]
        .into_iter()
        .flat_map(|a| [&a.query, &a.key, &a.value, &a.output])
        .map(|l| dense_macs(l, rows))
        .sum();
    let ffn = dense_macs(&block.ffn_in, rows) + dense_macs(&block.ffn_out, rows);
    projections + ffn + attention_macs(b * t, n, m) + attention_macs(b * n, t, m)
}

/// MACs of [`AxialBlock::forward_at_slot`] on `[B, T, N, M]`: the slot's query against the keys
/// and values of the tokens it sees (all `N`, or `slot + 1` under spatial causality), then the
/// slot's temporal attention and FFN.
fn block_at_slot_macs(block: &AxialBlock, [b, t, n]: [usize; 3], slot: usize) -> u64 {
    let slot_rows = b * t;
    let m = block.ffn_in.weight.dims()[0];
    let seen = if block.attn_spatial.causal { slot + 1 } else { n };
    let a = &block.attn_spatial;
    let spatial = dense_macs(&a.query, slot_rows)
        + dense_macs(&a.key, slot_rows * seen)
        + dense_macs(&a.value, slot_rows * seen)
        + 2 * (slot_rows * seen * m) as u64
        + dense_macs(&a.output, slot_rows);
    let a = &block.attn_temporal;
    let temporal: u64 =
        [&a.query, &a.key, &a.value, &a.output].into_iter().map(|l| dense_macs(l, slot_rows)).sum();
    let ffn = dense_macs(&block.ffn_in, slot_rows) + dense_macs(&block.ffn_out, slot_rows);
    spatial + temporal + attention_macs(b, t, m) + ffn
}

impl AxialTransformer {
    /// MACs of one forward pass on an input `[B, T, N, I]` (`shape` = `[B, T, N]`): the stem
    /// `I → M`, the blocks and the head `M → O`.
    pub fn forward_macs(&self, shape: [usize; 3]) -> u64 {
        let [b, t, n] = shape;
        let blocks: u64 = self.blocks.iter().map(|block| block_macs(block, shape)).sum();
        dense_macs(&self.proj_in, b * t * n) + blocks + dense_macs(&self.proj_out, b * t * n)
    }

    /// MACs of [`AxialTransformer::forward_at_slot`] on `[B, T, N, I]`: the stem and all blocks
    /// but the last in full, the last block and the head for the slot only.
    pub fn forward_at_slot_macs(&self, shape: [usize; 3], slot: usize) -> u64 {
        let [b, t, n] = shape;
        let blocks: u64 = match self.blocks.split_last() {
            Some((last, earlier)) => {
                earlier.iter().map(|block| block_macs(block, shape)).sum::<u64>()
                    + block_at_slot_macs(last, shape, slot)
            }
            None => 0,
        };
        dense_macs(&self.proj_in, b * t * n) + blocks + dense_macs(&self.proj_out, b * t)
    }
}

#[cfg(test)]
mod tests {
    use crate::axial::AxialTransformerConfig;
    use burn::tensor::Device;

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

    #[test]
    fn attention_macs_match_a_brute_force_count() {
        for (sequences, len, m) in [(1, 1, 1), (3, 7, 5), (10, 17, 16)] {
            assert_eq!(super::attention_macs(sequences, len, m), attention_macs_by_loops(sequences, len, m));
        }
    }
}
