//! Key/value caches for the inference path of an [`AxialTransformer`].
//!
//! Temporal attention is causal in every jinn model, so once frame `t` is final, the keys and
//! values its tokens contribute to temporal attention (per layer and per spatial slot) never
//! change. [`AxialKvCache`] keeps them in pre-allocated buffers `[B, S, T_max, M]` (heads not
//! split off; written with `slice_assign`, no per-step concatenation; on the CPU backend the
//! attention reads the frames so far as a window of the buffer, without a copy), and runs the
//! transformer on one new frame, or one new slot of a frame, at a time with the model's own
//! weights:
//!
//! * [`AxialKvCache::forward_frame`]: all `S` slots of the next frame at once (spatial
//!   attention as the model defines it, full or causal); temporal attention over the cached
//!   frames plus this one. Used for context frames and for MaskGIT's refinement steps.
//! * [`AxialKvCache::forward_slot`]: slot `n` of the next frame alone, for models with causal
//!   spatial attention; a per-layer spatial cache `[B, 1, S, M]` holds slots `0..n` of the
//!   current frame and is overwritten as the next frame's slots come. Used by token-by-token causal sampling.
//! * [`AxialKvCache::commit_frame`]: the frame is final; the next call starts frame `t + 1`.
//!
//! Calling `forward_frame` again for the same (uncommitted) frame overwrites that frame's
//! cached keys/values, so MaskGIT may refine a frame many times and commit the final pass.
//!
//! Speed: the buffers are written in place (each is uniquely owned between calls, so Burn's
//! `slice_assign` does not copy them); the positional rows of the current frame are built once
//! per frame; [`AxialKvCache::forward_frame_stemmed`] / [`AxialKvCache::forward_slot_stemmed`]
//! take inputs already passed through [`stem_rows`], so a sampler whose inputs come from a
//! fixed table (token embeddings, mask token) runs the stem once per table row instead of once
//! per pass; [`AxialKvCache::commit_pass`] fills a frame's keys/values without the work only the
//! outputs need (the last block's temporal query and attention, its FFN, the output projection).
//!
//! Each block is built from the sub-layer steps of [`crate::axial_step`]: the cached attention
//! ([`crate::AttentionStep::over_cache`]) takes the new rows and a closure that writes their keys
//! and values into the buffers and returns the window to attend over.

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use crate::axial::{AxialBlock, AxialTransformer};
use crate::error::NnError;
use crate::ops::{layer_norm, linear_rows};
use crate::position::sinusoid_table;

/// Keys and values of one attention layer, each `[B, S, T, M]` (heads not split off, as the
/// projection gives them). `Option` only so the buffers can be moved out and written in place;
/// always `Some` between calls.
#[derive(Debug, Clone)]
struct KvBuffers {
    keys: Option<Tensor<4>>,
    values: Option<Tensor<4>>,
}

impl KvBuffers {
    fn zeros(shape: [usize; 4], device: &Device) -> Self {
        KvBuffers { keys: Some(Tensor::zeros(shape, device)), values: Some(Tensor::zeros(shape, device)) }
    }

    /// The buffers' shape `[B, S, T, M]`.
    fn dims(&self) -> [usize; 4] {
        self.keys.as_ref().expect("cache buffer present between calls").dims()
    }

    /// Writes `k`, `v` into `[at]` of the buffers in place and returns rows `rows` of each
    /// buffer viewed as `[batch, rows per batch, M]`.
    fn write_then_rows(
        &mut self,
        at: [Range<usize>; 4],
        (k, v): (Tensor<4>, Tensor<4>),
        batch: usize,
        rows: Range<usize>,
    ) -> (Tensor<3>, Tensor<3>) {
        let keys = write_then_rows(&mut self.keys, at.clone(), k, batch, rows.clone());
        (keys, write_then_rows(&mut self.values, at, v, batch, rows))
    }
}

/// Per-layer buffers.
#[derive(Debug, Clone)]
struct LayerCache {
    /// Temporal keys and values `[B, S, T_max, M]`.
    temporal: KvBuffers,
    /// Spatial keys and values of the current frame `[B, 1, S, M]` (slot-by-slot mode only).
    spatial: KvBuffers,
}

/// Writes `value` into `buffer[ranges]` in place (the buffer is moved out, so it is uniquely
/// owned and `slice_assign` needs no copy) and returns rows `rows` of the buffer viewed as
/// `[batch, rows per batch, M]`: a window of the buffer, no copy (the attention reads it in
/// place on the CPU backend).
fn write_then_rows(
    buffer: &mut Option<Tensor<4>>,
    ranges: [Range<usize>; 4],
    value: Tensor<4>,
    batch: usize,
    rows: Range<usize>,
) -> Tensor<3> {
    let written = buffer.take().expect("cache buffer present between calls").slice_assign(ranges, value);
    let [b, s, t_max, m] = written.dims();
    let view = written.clone().reshape([batch, b * s * t_max / batch, m]).slice([0..batch, rows, 0..m]);
    *buffer = Some(written);
    view
}

/// The stem's position-free part `LN → Linear → LN` on rows `x` `[R, I]` → `[R, M]` (each
/// row independently; add [`AxialKvCache`]'s positions to get the stem of a slot).
pub fn stem_rows(model: &AxialTransformer, x: Tensor<2>) -> Tensor<2> {
    layer_norm(&model.norm_model, linear_rows(&model.proj_in, layer_norm(&model.norm_in, x)))
    // [r, m]
}

/// Inference caches of one [`AxialTransformer`] for a batch of `B` sequences of up to `T_max`
/// frames of `S` slots (see the module docs).
#[derive(Debug, Clone)]
pub struct AxialKvCache {
    layers: Vec<LayerCache>,
    /// Positional table `[max(T_max, S), M]`.
    pe: Tensor<2>,
    /// `PE[t] + PE[0..S]` `[1, S, M]` of frame `t`, built on first use in that frame.
    frame_pe: Option<(usize, Tensor<3>)>,
    batch: usize,
    slots: usize,
    max_frames: usize,
    /// Frames committed so far (the frame being processed has this index).
    frames: usize,
    /// Slots of the current frame already processed by `forward_slot`.
    slots_done: usize,
}

impl AxialKvCache {
    /// Empty caches for `model`, `batch` sequences of at most `max_frames` frames of `slots`
    /// slots each.
    pub fn new(
        model: &AxialTransformer,
        batch: usize,
        slots: usize,
        max_frames: usize,
        device: &Device,
    ) -> Result<Self, NnError> {
        if batch == 0 || slots == 0 || max_frames == 0 {
            return Err(NnError::InvalidConfig {
                field: "batch/slots/max_frames",
                reason: format!("must be positive, got {batch}/{slots}/{max_frames}"),
            });
        }
        let m = model.proj_in.weight.shape().dims::<2>()[1];
        let layers = model
            .blocks
            .iter()
            .map(|_| LayerCache {
                temporal: KvBuffers::zeros([batch, slots, max_frames, m], device),
                spatial: KvBuffers::zeros([batch, 1, slots, m], device),
            })
            .collect();
        let pe = sinusoid_table(max_frames.max(slots), m, device);
        Ok(AxialKvCache { layers, pe, frame_pe: None, batch, slots, max_frames, frames: 0, slots_done: 0 })
    }

    /// Frames committed so far; the next `forward_*` call works on frame `frames()`.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Marks the current frame final: its cached keys/values stay, the spatial cache is
    /// cleared, and the next call works on the following frame.
    pub fn commit_frame(&mut self) -> Result<(), NnError> {
        if self.frames >= self.max_frames {
            return Err(self.full_error());
        }
        self.frames += 1;
        self.slots_done = 0;
        Ok(())
    }

    fn full_error(&self) -> NnError {
        NnError::InvalidConfig {
            field: "max_frames",
            reason: format!("the cache holds {} frames and is full", self.max_frames),
        }
    }

    /// Runs the next frame: `x` `[B, S, I]` (the model's input for every slot of the frame)
    /// → `[B, S, O]`, equal to the model's output for this frame given the committed frames.
    pub fn forward_frame(&mut self, model: &AxialTransformer, x: Tensor<3>) -> Result<Tensor<3>, NnError> {
        let [b, s, i] = x.dims();
        let [d_in, m] = model.proj_in.weight.shape().dims::<2>();
        self.check_rows("frame input [B, S, I]", [b, s, i], [self.batch, self.slots, d_in])?;
        let h = stem_rows(model, x.reshape([b * s, i])).reshape([b, s, m]); // [b, s, m]
        self.forward_frame_stemmed(model, h)
    }

    /// [`AxialKvCache::forward_frame`] on `h` `[B, S, M]`, the input already passed through
    /// [`stem_rows`] (positions are added here).
    pub fn forward_frame_stemmed(
        &mut self,
        model: &AxialTransformer,
        h: Tensor<3>,
    ) -> Result<Tensor<3>, NnError> {
        let h = self.frame_blocks(model, h, true)?; // [b, s, m]
        Ok(linear_rows(&model.proj_out, h)) // [b, s, o]
    }

    /// Fills the current frame's cached keys/values from `h` `[B, S, M]` (stemmed as for
    /// [`AxialKvCache::forward_frame_stemmed`]) without computing outputs, then commits the
    /// frame. For frames whose outputs are not needed (context, MaskGIT's final tokens).
    pub fn commit_pass(&mut self, model: &AxialTransformer, h: Tensor<3>) -> Result<(), NnError> {
        self.frame_blocks(model, h, false)?;
        self.commit_frame()
    }

    /// The blocks on a whole stemmed frame `[B, S, M]`; without `outputs` the last block stops
    /// once its temporal keys and values are cached (what it returns then is unused).
    fn frame_blocks(
        &mut self,
        model: &AxialTransformer,
        h: Tensor<3>,
        outputs: bool,
    ) -> Result<Tensor<3>, NnError> {
        let d_model = model.proj_in.weight.shape().dims::<2>()[1];
        self.check_rows("stemmed frame [B, S, M]", h.dims(), [self.batch, self.slots, d_model])?;
        let t = self.frames;
        let mut h = h + self.frame_positions(); // [b, s, m]
        let last = model.blocks.len().saturating_sub(1);
        for (l, (block, cache)) in model.blocks.iter().zip(&mut self.layers).enumerate() {
            h = frame_block(block, cache, h, t, outputs || l < last);
        }
        self.slots_done = 0;
        Ok(h)
    }

    /// `PE[t] + PE[0..S]` `[1, S, M]` of the current frame `t` (built once per frame).
    fn frame_positions(&mut self) -> Tensor<3> {
        let t = self.frames;
        match &self.frame_pe {
            Some((frame, pe)) if *frame == t => pe.clone(),
            _ => {
                let m = self.pe.dims()[1];
                let s = self.slots;
                let pe_t = self.pe.clone().slice([t..t + 1, 0..m]); // [1, m]
                let pe = (self.pe.clone().slice([0..s, 0..m]) + pe_t).reshape([1, s, m]); // [1, s, m]
                self.frame_pe = Some((t, pe.clone()));
                pe
            }
        }
    }

    /// Runs slot `slot` of the next frame alone: `x` `[B, 1, I]` → `[B, 1, O]`. Slots must
    /// come in order `0, 1, …` within a frame, and the model's spatial attention must be
    /// causal (a slot may not depend on later slots).
    pub fn forward_slot(
        &mut self,
        model: &AxialTransformer,
        x: Tensor<3>,
        slot: usize,
    ) -> Result<Tensor<3>, NnError> {
        let [b, one, i] = x.dims();
        let [d_in, m] = model.proj_in.weight.shape().dims::<2>();
        self.check_rows("slot input [B, 1, I]", [b, one, i], [self.batch, 1, d_in])?;
        let h = stem_rows(model, x.reshape([b, i])).reshape([b, 1, m]); // [b, 1, m]
        self.forward_slot_stemmed(model, h, slot)
    }

    /// [`AxialKvCache::forward_slot`] on `h` `[B, 1, M]`, the input already passed through
    /// [`stem_rows`] (positions are added here).
    pub fn forward_slot_stemmed(
        &mut self,
        model: &AxialTransformer,
        h: Tensor<3>,
        slot: usize,
    ) -> Result<Tensor<3>, NnError> {
        let m = model.proj_in.weight.shape().dims::<2>()[1];
        self.check_rows("stemmed slot [B, 1, M]", h.dims(), [self.batch, 1, m])?;
        if model.blocks.iter().any(|bl| !bl.attn_spatial.causal) {
            return Err(NnError::InvalidConfig {
                field: "spatial_causal",
                reason: "slot-by-slot decoding needs causal spatial attention".into(),
            });
        }
        if slot != self.slots_done || slot >= self.slots {
            return Err(NnError::InvalidConfig {
                field: "slot",
                reason: format!("expected slot {} (of {}), got {slot}", self.slots_done, self.slots),
            });
        }
        let t = self.frames;
        let pe = self.frame_positions(); // [1, s, m]
        let mut h = h + pe.slice([0..1, slot..slot + 1, 0..m]); // [b, 1, m]
        for (block, cache) in model.blocks.iter().zip(&mut self.layers) {
            h = slot_block(block, cache, h, t, slot);
        }
        self.slots_done += 1;
        Ok(linear_rows(&model.proj_out, h)) // [b, 1, o]
    }

    /// `got` must be `want` (an input's `[B, rows, width]`), and the cache must have room for
    /// the current frame.
    fn check_rows(&self, what: &'static str, got: [usize; 3], want: [usize; 3]) -> Result<(), NnError> {
        if got != want {
            return Err(NnError::Shape { what, expected: format!("{want:?}"), got: format!("{got:?}") });
        }
        if self.frames >= self.max_frames {
            return Err(self.full_error());
        }
        Ok(())
    }
}

/// One block on a whole frame `x` `[B, S, M]` at frame index `t`.
/// Without `ffn_too` the block stops once its temporal keys and values are cached.
fn frame_block(
    block: &AxialBlock,
    cache: &mut LayerCache,
    x: Tensor<3>,
    t: usize,
    ffn_too: bool,
) -> Tensor<3> {
    let [b, s, m] = x.dims();
    // Spatial attention within the frame (the module's own causal flag).
    let x = x.clone() + block.spatial().over_seq(x); // [b, s, m]

    // Temporal attention: each slot's query against that slot's frames 0..=t.
    let at = [0..b, 0..s, t..t + 1, 0..m];
    let rows = x.clone().reshape([b * s, 1, m]); // [b·s, 1, m]
    let write = |k: Tensor<3>, v: Tensor<3>| {
        let kv = (k.reshape([b, s, 1, m]), v.reshape([b, s, 1, m]));
        cache.temporal.write_then_rows(at, kv, b * s, 0..t + 1) // each [b·s, t+1, m]
    };
    if !ffn_too {
        block.temporal().fill_cache(rows, |k, v| {
            write(k, v);
        });
        return x;
    }
    let x = x + block.temporal().over_cache(rows, write).reshape([b, s, m]); // [b, s, m]
    x.clone() + block.ffn().apply(x) // [b, s, m]
}

/// One block on slot `n` alone, `x` `[B, 1, M]`, at frame index `t`.
fn slot_block(block: &AxialBlock, cache: &mut LayerCache, x: Tensor<3>, t: usize, n: usize) -> Tensor<3> {
    let [b, _, m] = x.dims();
    // Spatial attention over slots 0..=n of this frame (causal: later slots do not exist yet).
    let at = [0..b, 0..1, n..n + 1, 0..m];
    let write = |k: Tensor<3>, v: Tensor<3>| {
        let kv = (k.reshape([b, 1, 1, m]), v.reshape([b, 1, 1, m]));
        cache.spatial.write_then_rows(at, kv, b, 0..n + 1) // each [b, n+1, m]
    };
    let x = x.clone() + block.spatial().over_cache(x, write); // [b, 1, m]

    // Temporal attention over slot n of frames 0..=t: rows n·T_max .. n·T_max + t of the
    // buffer viewed as [B, S·T_max, M].
    let t_max = cache.temporal.dims()[2];
    let (at, rows) = ([0..b, n..n + 1, t..t + 1, 0..m], n * t_max..n * t_max + t + 1);
    let write = |k: Tensor<3>, v: Tensor<3>| {
        let kv = (k.reshape([b, 1, 1, m]), v.reshape([b, 1, 1, m]));
        cache.temporal.write_then_rows(at, kv, b, rows) // each [b, t+1, m]
    };
    let x = x.clone() + block.temporal().over_cache(x, write); // [b, 1, m]
    x.clone() + block.ffn().apply(x) // [b, 1, m]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axial::AxialTransformerConfig;
    use crate::test_util::to_vec;
    use burn::tensor::Distribution;

    fn assert_close(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len());
        let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "{what}: max |Δ| = {worst}");
    }

    /// Frame-by-frame cached outputs equal the full forward pass, frame by frame.
    fn check_frames(spatial_causal: bool) {
        let device = Device::flex();
        let model = AxialTransformerConfig::new(6, 16, 32, 5, 2, 4)
            .with_spatial_causal(spatial_causal)
            .init(&device)
            .unwrap();
        let (b, t, s, i) = (2, 4, 3, 6);
        let x = Tensor::<4>::random([b, t, s, i], Distribution::Normal(0.0, 1.0), &device);
        let full = model.forward(x.clone()); // [b, t, s, 5]
        let mut cache = AxialKvCache::new(&model, b, s, t, &device).unwrap();
        for f in 0..t {
            // A throw-away pass on noise first: re-running an uncommitted frame must overwrite it.
            let noise = Tensor::<3>::random([b, s, i], Distribution::Normal(0.0, 1.0), &device);
            cache.forward_frame(&model, noise).unwrap();
            let frame = x.clone().slice([0..b, f..f + 1, 0..s, 0..i]).reshape([b, s, i]);
            let got = cache.forward_frame(&model, frame).unwrap();
            let want = full.clone().slice([0..b, f..f + 1, 0..s, 0..5]).reshape([b, s, 5]);
            assert_close(&to_vec(got), &to_vec(want), &format!("frame {f}, spatial_causal {spatial_causal}"));
            cache.commit_frame().unwrap();
        }
        assert!(cache.forward_frame(&model, Tensor::zeros([b, s, i], &device)).is_err(), "cache is full");
    }

    #[test]
    fn frame_by_frame_matches_full_forward() {
        check_frames(false);
        check_frames(true);
    }

    /// Stemmed inputs and output-free commit passes give the same cache as `forward_frame`.
    #[test]
    fn stemmed_frames_and_commit_passes_match_full_forward() {
        let device = Device::flex();
        let model = AxialTransformerConfig::new(6, 16, 32, 5, 2, 4).init(&device).unwrap();
        let (b, t, s, i) = (2, 4, 3, 6);
        let x = Tensor::<4>::random([b, t, s, i], Distribution::Normal(0.0, 1.0), &device);
        let full = model.forward(x.clone()); // [b, t, s, 5]
        let mut cache = AxialKvCache::new(&model, b, s, t, &device).unwrap();
        for f in 0..t {
            let frame = x.clone().slice([0..b, f..f + 1, 0..s, 0..i]).reshape([b * s, i]);
            let h = stem_rows(&model, frame).reshape([b, s, 16]);
            if f % 2 == 0 && f + 1 < t {
                cache.commit_pass(&model, h).unwrap();
                continue;
            }
            let got = cache.forward_frame_stemmed(&model, h).unwrap();
            let want = full.clone().slice([0..b, f..f + 1, 0..s, 0..5]).reshape([b, s, 5]);
            assert_close(&to_vec(got), &to_vec(want), &format!("frame {f}"));
            cache.commit_frame().unwrap();
        }
        let wrong = Tensor::<3>::zeros([b, s, 15], &device);
        assert!(AxialKvCache::new(&model, b, s, t, &device).unwrap().commit_pass(&model, wrong).is_err());
    }

    #[test]
    fn slot_by_slot_matches_full_forward() {
        let device = Device::flex();
        let model =
            AxialTransformerConfig::new(6, 16, 32, 5, 2, 4).with_spatial_causal(true).init(&device).unwrap();
        let (b, t, s, i) = (2, 3, 4, 6);
        let x = Tensor::<4>::random([b, t, s, i], Distribution::Normal(0.0, 1.0), &device);
        let full = model.forward(x.clone());
        let mut cache = AxialKvCache::new(&model, b, s, t, &device).unwrap();
        for f in 0..t {
            for n in 0..s {
                let slot = x.clone().slice([0..b, f..f + 1, n..n + 1, 0..i]).reshape([b, 1, i]);
                let got = cache.forward_slot(&model, slot, n).unwrap();
                let want = full.clone().slice([0..b, f..f + 1, n..n + 1, 0..5]).reshape([b, 1, 5]);
                assert_close(&to_vec(got), &to_vec(want), &format!("frame {f} slot {n}"));
            }
            cache.commit_frame().unwrap();
        }
    }

    #[test]
    fn misuse_is_an_error() {
        let device = Device::flex();
        let full_spatial = AxialTransformerConfig::new(6, 16, 32, 5, 1, 4).init(&device).unwrap();
        let mut cache = AxialKvCache::new(&full_spatial, 1, 3, 2, &device).unwrap();
        let slot = Tensor::<3>::zeros([1, 1, 6], &device);
        assert!(cache.forward_slot(&full_spatial, slot.clone(), 0).is_err(), "full spatial attention");
        let causal =
            AxialTransformerConfig::new(6, 16, 32, 5, 1, 4).with_spatial_causal(true).init(&device).unwrap();
        let mut cache = AxialKvCache::new(&causal, 1, 3, 2, &device).unwrap();
        assert!(cache.forward_slot(&causal, slot.clone(), 1).is_err(), "slot out of order");
        assert!(cache.forward_frame(&causal, Tensor::zeros([1, 2, 6], &device)).is_err(), "wrong slot count");
        assert!(cache.forward_slot(&causal, Tensor::zeros([1, 1, 5], &device), 0).is_err(), "wrong width");
    }
}
