//! Parameter-count parity with Jasmine's models at their defaults: the VQ-VAE tokenizer is
//! encoder AxialTransformer(I = P, O = L) + codebook `K×L` + decoder AxialTransformer(I = L, O = P).

use burn::module::Module;
use burn::tensor::Device;

use crate::axial::AxialTransformerConfig;
use crate::vq::VectorQuantizerConfig;

/// Tokenizer parameter count at width `m`, FFN `d`, `heads`, `blocks` per side, latent `l`,
/// `k` codes, patch vector length `p`.
fn tokenizer_params(m: usize, d: usize, heads: usize, blocks: usize, l: usize, k: usize, p: usize) -> usize {
    let device = Device::flex();
    let enc = AxialTransformerConfig::new(p, m, d, l, blocks, heads).init(&device).unwrap();
    let dec = AxialTransformerConfig::new(l, m, d, p, blocks, heads).init(&device).unwrap();
    let vq = VectorQuantizerConfig::new(k, l).init(&device).unwrap();
    enc.num_params() + vq.num_params() + dec.num_params()
}

#[test]
fn axial_block_matches_spec_formula() {
    let device = Device::flex();
    let (m, d) = (32, 64);
    let block = crate::axial::AxialBlockConfig::new(m, d, 4).init(&device).unwrap();
    assert_eq!(block.num_params(), 8 * m * m + 2 * m * d + 15 * m + d);
}

#[test]
fn tokenizer_small_config_matches_jasmine() {
    assert_eq!(tokenizer_params(128, 512, 4, 2, 32, 1024, 16 * 16 * 3), 1_299_040);
}

#[test]
fn tokenizer_default_config_matches_jasmine() {
    // Width 512: ~34.5M parameters initialised on CPU (a fraction of a second at opt-level 3).
    assert_eq!(tokenizer_params(512, 2048, 8, 4, 32, 1024, 16 * 16 * 3), 34_489_696);
}
