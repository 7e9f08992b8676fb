//! Multiply-accumulate (MAC) counts of forward passes, read from the layers' weights: the dense
//! layers and the attention matmuls, the work that bounds a step from below on any backend (a
//! roofline's compute side). `jinn bench train` turns them into a step's FLOPs and a time
//! floor. Written here because the counts follow this crate's own layer layout.

use crate::axial::AxialTransformer;
use burn::nn::Linear;

/// MACs of the dense layer `linear` (`[I, O]` weight) applied to `rows` rows.
pub fn dense_macs(linear: &Linear, rows: usize) -> u64 {
    let [d_in, d_out] = linear.weight.dims();
    rows as u64 * d_in as u64 * d_out as u64
}

/// MACs of the two attention matmuls (`Q·Kᵀ` and `softmax·V`) of `sequences` sequences of
/// `len` tokens at width `d_model`. Causal attention is counted in full: the masked half is
/// computed and then masked, as every backend here does.
pub fn attention_macs(sequences: usize, len: usize, d_model: usize) -> u64 {
    2 * sequences as u64 * (len * len) as u64 * d_model as u64
}

impl AxialTransformer {
    /// MACs of one forward pass on an input `[B, T, N, I]` (`shape` = `[B, T, N]`): the stem
    /// `I → M`, per block the spatial and temporal attention (four `M → M` projections each,
    /// plus their score and value matmuls) and the FFN `M → D → M`, and the head `M → O`.
    pub fn forward_macs(&self, shape: [usize; 3]) -> u64 {
        let [b, t, n] = shape;
        let rows = b * t * n;
        let m = self.proj_in.weight.dims()[1];
        let blocks: u64 = self
            .blocks
            .iter()
            .map(|block| {
                let projections: u64 = [&block.attn_spatial, &block.attn_temporal]
                    .into_iter()
                    .flat_map(|a| [&a.query, &a.key, &a.value, &a.output])
                    .map(|l| dense_macs(l, rows))
                    .sum();
                let ffn = dense_macs(&block.ffn_in, rows) + dense_macs(&block.ffn_out, rows);
                projections + ffn + attention_macs(b * t, n, m) + attention_macs(b * n, t, m)
            })
            .sum();
        dense_macs(&self.proj_in, rows) + blocks + dense_macs(&self.proj_out, rows)
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
    fn attention_macs_match_a_brute_force_count() {
        for (sequences, len, m) in [(1, 1, 1), (3, 7, 5), (10, 17, 16)] {
            assert_eq!(super::attention_macs(sequences, len, m), attention_macs_by_loops(sequences, len, m));
        }
    }
}
