//! MaskGIT training masks (as Jasmine's `DynamicsMaskGIT` in `jasmine/models/dynamics.py`).
//!
//! Per clip (or, with `per_frame`, per frame) a ratio `p ~ U[mask_limit, 1)`; every token of
//! frames `1..T−1` is masked independently with probability `p`; frame 0 is never masked.
//! Masks are drawn on the host from a caller-supplied generator (derived from `(seed, step,
//! purpose)`), so training is reproducible and a resumed run draws the same masks.

use crate::streams::clip_rngs;
use burn::tensor::{Bool, Device, Tensor, TensorData};
use jinn_data::rng::SampleStreams;
use jinn_nn::NnError;
use rand::Rng;

/// A MaskGIT mask `[B, T, N]` (row-major, true = masked), each clip's drawn from its own
/// stream; one ratio per clip, or one per frame when `per_frame`.
pub fn draw_mask(
    dims: [usize; 3],
    mask_limit: f64,
    per_frame: bool,
    streams: &SampleStreams,
) -> Result<Vec<bool>, NnError> {
    let [b, t, n] = dims;
    let mut mask = vec![false; b * t * n]; // [b, t, n]
    for (sample, mut rng) in mask.chunks_mut(t * n).zip(clip_rngs(streams, b)?) {
        let mut p: f64 = rng.random_range(mask_limit..1.0);
        for frame in sample.chunks_mut(n).skip(1) {
            if per_frame {
                p = rng.random_range(mask_limit..1.0);
            }
            for slot in frame.iter_mut() {
                *slot = rng.random_bool(p);
            }
        }
    }
    Ok(mask)
}

/// A host mask `[B, T, N]` as a Bool tensor.
pub fn mask_tensor(mask: &[bool], dims: [usize; 3], device: &Device) -> Tensor<3, Bool> {
    Tensor::from_data(TensorData::new(mask.to_vec(), dims), device)
}

/// Which of `b` clips read their previous-frame input from the model's own predictions
/// (`previous_frame_own_share`), each with probability `share`, drawn from the clips' own
/// streams for that purpose (so the masks do not change with the share).
pub fn own_previous_clips(streams: &SampleStreams, b: usize, share: f64) -> Result<Vec<bool>, NnError> {
    if share <= 0.0 {
        return Ok(vec![false; b]);
    }
    let streams = (*streams).for_purpose("dynamics-own-previous");
    Ok(clip_rngs(&streams, b)?.into_iter().map(|mut rng| rng.random_bool(share.min(1.0))).collect())
}

/// The tokens `[B, T, N]` a clip's previous-frame input reads: the true `tokens`, with the
/// masked positions of the `own` clips replaced by `predicted` (row-major host data).
pub fn own_previous_tokens(tokens: &[i64], predicted: &[i64], mask: &[bool], own: &[bool]) -> Vec<i64> {
    let per_clip = tokens.len() / own.len().max(1);
    tokens
        .iter()
        .zip(predicted)
        .zip(mask)
        .enumerate()
        .map(|(i, ((&truth, &guess), &masked))| if masked && own[i / per_clip] { guess } else { truth })
        .collect()
}
