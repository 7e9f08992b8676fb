//! Rollout samplers for trained dynamics (after Jasmine's `GenieMaskGIT.sample_maskgit` and
//! `sample_causal`), with KV caches.
//!
//! Given context tokens `[B, C, N]` and the actions of all `S−1` transitions, [`sample`]
//! generates frames `C..S−1` one at a time:
//!
//! * MaskGIT ([`DynamicsKind::MASKGIT`]): `steps` refinement passes per frame. At step `s`,
//!   `r_s = cos(π(s+1)/(2·steps))`, logits are divided by `τ·(1 − r_s)` (temperature annealed
//!   from ≈0 up to τ), every masked position of the frame is sampled (argmax or categorical)
//!   and written, and the `N − round(N(1 − r_s))` least confident of them are masked again.
//!   Only the frame being generated is ranked and re-masked: context and earlier generated
//!   tokens are never touched (the reference can overwrite one of them per step; jinn fixes
//!   that deliberately).
//! * Causal ([`DynamicsKind::CAUSAL`]): token by token, logits divided by τ.
//!
//! With `use_cache` (the default) the transformer runs only on the frame (MaskGIT) or slot
//! (causal) being generated, against [`AxialKvCache`]s of the earlier frames; without it
//! every pass recomputes frames `0..=f` (temporal attention is causal, so later frames never
//! matter). Both give the same logits (tests). Sampling happens on the host from a ChaCha
//! generator seeded by [`SamplerConfig::seed`], so rollouts are reproducible.
//!
//! The cached path does no per-pass work that a table can hold: the transformer's stem
//! (`LN → Linear → LN`, [`stem_rows`]) is applied once to the token embeddings and the mask
//! token (a `[V+1, M]` table; a pass's input is one `select` from it) and once per frame to
//! the action slot; context frames and each generated frame's final tokens only fill the
//! caches ([`AxialKvCache::commit_pass`], no logits).

use crate::dynamics::{Dynamics, DynamicsKind};
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use jinn_nn::ops::{self, linear_rows};
use jinn_nn::warm_pool::WarmPool;
use jinn_nn::{stem_rows, AxialKvCache, NnError};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Sampler settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// MaskGIT refinement steps per frame (25 in the reference).
    pub maskgit_steps: usize,
    /// Sampling temperature τ (MaskGIT anneals up to it); 0 means argmax.
    pub temperature: f64,
    /// Take the most likely token instead of sampling.
    pub argmax: bool,
    /// Seed of the categorical draws.
    pub seed: u64,
    /// Use the KV caches (false: recompute every earlier frame each pass; for tests and
    /// benchmarks).
    pub use_cache: bool,
    /// Diffusion: denoising steps per frame; must equal the model's `K` when given (`None`:
    /// the model's `K`).
    pub denoise_steps: Option<usize>,
    /// Diffusion: context corruption `c_f`; context frames are re-noised to the signal level
    /// `round((1 − c_f)·K)/K` (the reference's default 0.1).
    pub context_noise: f64,
    /// Token dynamics: the most frames the dynamics sees at once, normally its training clip
    /// length (`None`: the whole rollout). A longer rollout slides: each frame past the window
    /// is generated from the `window − 1` frames before it, at the temporal positions the
    /// model was trained on (see [`crate::trained_clip_frames`]).
    pub window: Option<usize>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            maskgit_steps: 25,
            temperature: 1.0,
            argmax: false,
            seed: 0,
            use_cache: true,
            denoise_steps: None,
            context_noise: 0.1,
            window: None,
        }
    }
}

/// A sampled rollout.
#[derive(Debug, Clone)]
pub struct Rollout {
    /// Tokens of all frames `[B, S, N]`, row-major (the context copied unchanged).
    pub tokens: Vec<i64>,
    /// `[B, S, N]`.
    pub dims: [usize; 3],
    /// Raw logits each generated token was drawn from (MaskGIT: at the step it was fixed)
    /// `[B, S−C, N, V]`, row-major.
    pub logits: Vec<f32>,
}

impl Rollout {
    /// The tokens as an `Int` tensor `[B, S, N]`.
    pub fn token_tensor(&self, device: &Device) -> Tensor<3, Int> {
        Tensor::from_data(TensorData::new(self.tokens.clone(), self.dims), device)
    }
}

/// Generates frames `C..frames−1` after the context `[B, C, N]` under `actions`
/// `[B, frames−1, La]` (the action of the transition into frame `t` is row `t−1`). With a
/// [`SamplerConfig::window`] shorter than `frames`, the rollout slides (see [`windows`]).
pub fn sample(
    dynamics: &Dynamics,
    context: Tensor<3, Int>,
    actions: Tensor<3>,
    frames: usize,
    cfg: &SamplerConfig,
) -> Result<Rollout, NnError> {
    let window = match cfg.window {
        Some(w) if w < 2 => {
            return Err(NnError::InvalidConfig { field: "window", reason: format!("must be ≥ 2, got {w}") })
        }
        Some(w) if frames > w => w,
        _ => return sample_within(dynamics, context, actions, frames, cfg),
    };
    let [b, c, n] = context.dims();
    let device = context.device();
    let la = actions.dims()[2];
    if b == 0 || n == 0 || c == 0 || frames <= c || actions.dims() != [b, frames - 1, la] {
        // The unwindowed sampler names what is wrong (or has nothing to slide over).
        return sample_within(
            dynamics,
            context,
            actions,
            frames,
            &SamplerConfig { window: None, ..cfg.clone() },
        );
    }
    let mut tokens: Vec<i64> = context.try_into_vec_as::<i64>().expect("integer tensor data"); // [b, c, n]
    let mut segments: Vec<Rollout> = Vec::new();
    for (i, span) in windows(c, frames, window).into_iter().enumerate() {
        let have = tokens.len() / (b * n);
        let ctx = frame_range(&tokens, [b, have, n], span.start..span.context_end);
        let ctx =
            Tensor::<3, Int>::from_data(TensorData::new(ctx, [b, span.context_end - span.start, n]), &device);
        let acts = actions.clone().slice([0..b, span.start..span.end - 1, 0..la]); // [b, span − 1, la]
        let seed = if i == 0 {
            cfg.seed
        } else {
            jinn_data::rng::derive_seed(cfg.seed, "world-sample-window", i as u64)
        };
        let part = sample_within(
            dynamics,
            ctx,
            acts,
            span.end - span.start,
            &SamplerConfig { seed, ..cfg.clone() },
        )?;
        let fresh =
            frame_range(&part.tokens, part.dims, span.context_end - span.start..span.end - span.start);
        tokens = concat_frames(&tokens, [b, have, n], &fresh, span.end - span.context_end);
        segments.push(part);
    }
    let v = dynamics.num_codes();
    let per_frame = n * v;
    let mut logits = Vec::with_capacity(b * (frames - c) * per_frame);
    for bi in 0..b {
        for part in &segments {
            let gen = part.logits.len() / (b * per_frame);
            logits.extend_from_slice(&part.logits[bi * gen * per_frame..(bi + 1) * gen * per_frame]);
        }
    }
    Ok(Rollout { tokens, dims: [b, frames, n], logits })
}

/// One pass of a sliding rollout: frames `start..context_end` are given, `context_end..end`
/// generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSpan {
    /// First frame the dynamics sees.
    pub start: usize,
    /// End of the given frames.
    pub context_end: usize,
    /// End of the frames this pass generates.
    pub end: usize,
}

/// The passes of a rollout from `context` given frames to `frames` frames that sees at most
/// `window` frames at once: the first pass fills the window from the last `window − 1` given
/// frames, every later pass generates one frame from the `window − 1` before it.
pub fn windows(context: usize, frames: usize, window: usize) -> Vec<WindowSpan> {
    let mut spans = Vec::new();
    let mut have = context;
    while have < frames {
        let start = have.saturating_sub(window - 1);
        let end = (start + window).min(frames);
        spans.push(WindowSpan { start, context_end: have, end });
        have = end;
    }
    spans
}

/// Frames `range` of every batch entry of `tokens` `[b, t, n]` → `[b, range.len(), n]`.
fn frame_range(tokens: &[i64], [b, t, n]: [usize; 3], range: std::ops::Range<usize>) -> Vec<i64> {
    (0..b).flat_map(|bi| &tokens[(bi * t + range.start) * n..(bi * t + range.end) * n]).copied().collect()
}

/// `a` `[b, ta, n]` followed, per batch entry, by `more` `[b, tm, n]` → `[b, ta + tm, n]`.
fn concat_frames(a: &[i64], [b, ta, n]: [usize; 3], more: &[i64], tm: usize) -> Vec<i64> {
    (0..b)
        .flat_map(|bi| a[bi * ta * n..(bi + 1) * ta * n].iter().chain(&more[bi * tm * n..(bi + 1) * tm * n]))
        .copied()
        .collect()
}

/// [`sample`] within one window: the rollout's frames all seen at once.
fn sample_within(
    dynamics: &Dynamics,
    context: Tensor<3, Int>,
    actions: Tensor<3>,
    frames: usize,
    cfg: &SamplerConfig,
) -> Result<Rollout, NnError> {
    let [b, c, n] = context.dims();
    let la = dynamics.action_dim();
    if c == 0 || frames <= c {
        return Err(NnError::InvalidConfig {
            field: "frames",
            reason: format!("need at least one context frame and frames > context; got {c} and {frames}"),
        });
    }
    if actions.dims() != [b, frames - 1, la] {
        return Err(NnError::Shape {
            what: "actions [B, frames−1, La]",
            expected: format!("[{b}, {}, {la}]", frames - 1),
            got: format!("{:?}", actions.dims()),
        });
    }
    if dynamics.kind() == DynamicsKind::MASKGIT && cfg.maskgit_steps == 0 {
        return Err(NnError::InvalidConfig { field: "maskgit_steps", reason: "must be ≥ 1".into() });
    }
    if !(cfg.temperature.is_finite() && cfg.temperature >= 0.0) {
        return Err(NnError::InvalidConfig {
            field: "temperature",
            reason: format!("must be ≥ 0, got {}", cfg.temperature),
        });
    }
    // On the CPU the other pool threads poll for the rollout's many small parallel ops instead
    // of sleeping; a GPU rollout leaves them asleep.
    let _warm = ops::on_cpu(&context.device()).then(WarmPool::new);
    let context_host: Vec<i64> = context.clone().try_into_vec_as::<i64>().expect("integer tensor data");
    let v = dynamics.num_codes();
    if let Some(bad) = context_host.iter().find(|&&tok| tok < 0 || tok as usize >= v) {
        return Err(NnError::Shape {
            what: "context token",
            expected: format!("in 0..{v}"),
            got: bad.to_string(),
        });
    }
    let mut state = State {
        dynamics,
        actions,
        device: context.device(),
        tokens: vec![0; b * frames * n],
        dims: [b, frames, n],
        cache: None,
        stemmed: None,
        rng: jinn_data::rng::rng_for(cfg.seed, "world-sample", 0),
    };
    for bi in 0..b {
        let dst = bi * frames * n;
        state.tokens[dst..dst + c * n].copy_from_slice(&context_host[bi * c * n..(bi + 1) * c * n]);
    }
    // The KV cache runs the transformer's own blocks; a reversible backbone has none there, so
    // reversible models sample uncached (same logits, recomputed over the window).
    if cfg.use_cache && dynamics.reversible_blocks.is_empty() {
        let mut cache = AxialKvCache::new(&dynamics.transformer, b, n + 1, frames, &state.device)?;
        state.stemmed = Some(StemmedInputs::new(dynamics));
        for t in 0..c {
            state.start_frame(t);
            let h = state.stemmed_frame(t, None);
            cache.commit_pass(&dynamics.transformer, h)?;
        }
        state.cache = Some(cache);
    }
    let mut logits = Vec::with_capacity(b * (frames - c) * n * v);
    for f in c..frames {
        state.start_frame(f);
        let frame_logits =
            if dynamics.causal { state.causal_frame(f, cfg)? } else { state.maskgit_frame(f, cfg)? }; // [b, n, v]
        logits.extend(frame_logits);
    }
    // Reorder [S−C, B, N, V] → [B, S−C, N, V].
    let g = frames - c;
    let mut ordered = vec![0.0f32; logits.len()];
    for fi in 0..g {
        for bi in 0..b {
            let src = (fi * b + bi) * n * v;
            let dst = (bi * g + fi) * n * v;
            ordered[dst..dst + n * v].copy_from_slice(&logits[src..src + n * v]);
        }
    }
    Ok(Rollout { tokens: state.tokens, dims: [b, frames, n], logits: ordered })
}

/// The sampler's working state.
struct State<'a> {
    dynamics: &'a Dynamics,
    /// `[B, S−1, La]`.
    actions: Tensor<3>,
    device: Device,
    /// `[B, S, N]` host tokens.
    tokens: Vec<i64>,
    dims: [usize; 3],
    cache: Option<AxialKvCache>,
    /// Stemmed input tables of the cached path.
    stemmed: Option<StemmedInputs>,
    rng: ChaCha8Rng,
}

/// Transformer inputs already passed through the stem (cached path only).
struct StemmedInputs {
    /// Stemmed token embeddings, then the stemmed mask token (MaskGIT) `[V(+1), M]` (raw,
    /// not stemmed, for a model with a previous-frame input).
    table: Tensor<2>,
    /// The stemmed action slot of the current frame `[B, 1, M]`.
    action: Option<Tensor<3>>,
    /// The current frame's previous-frame input `[B·N, M]`, for a model that takes one (the
    /// earlier frames are final once the frame starts, so every MaskGIT step reuses it).
    previous: Option<Tensor<2>>,
}

impl StemmedInputs {
    fn new(dynamics: &Dynamics) -> Self {
        let rows = match &dynamics.mask_token {
            Some(token) => {
                let m = token.shape().dims::<1>()[0];
                Tensor::cat(vec![dynamics.token_embed.val(), token.val().reshape([1, m])], 0)
                // [v+1, m]
            }
            None => dynamics.token_embed.val(), // [v, m]
        };
        // With a previous-frame input the stem (it starts with a layer norm) runs per pass on
        // the sum of the two embeddings, so the table keeps the raw rows.
        let table =
            if dynamics.previous_embed.is_some() { rows } else { stem_rows(&dynamics.transformer, rows) };
        StemmedInputs { table, action: None, previous: None }
    }
}

impl State<'_> {
    /// Prepare frame `f`: the stemmed action slot (cached path).
    fn start_frame(&mut self, f: usize) {
        if self.stemmed.is_none() {
            return;
        }
        let [b, _, _] = self.dims;
        let slot = self.action_slot(f); // [b, 1, m]
        let m = slot.dims()[2];
        let stemmed = stem_rows(&self.dynamics.transformer, slot.reshape([b, m])).reshape([b, 1, m]);
        let previous = self.previous_frame_input(f);
        if let Some(inputs) = self.stemmed.as_mut() {
            inputs.action = Some(stemmed);
            inputs.previous = previous;
        }
    }

    /// The stemmed input of frame `f` `[B, N+1, M]` (cached path): the action slot, then the
    /// tokens' rows with `mask` `[B, N]` positions taking the mask token's row.
    fn stemmed_frame(&self, f: usize, mask: Option<&[bool]>) -> Tensor<3> {
        let [b, _, n] = self.dims;
        let inputs = self.stemmed.as_ref().expect("stemmed inputs on the cached path");
        let mask_row = self.dynamics.num_codes() as i64;
        let mut ids = self.frame_tokens(f); // [b·n]
        if let Some(mask) = mask {
            for (id, &masked) in ids.iter_mut().zip(mask) {
                if masked {
                    *id = mask_row;
                }
            }
        }
        let m = inputs.table.dims()[1];
        let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [b * n]), &self.device);
        let rows = inputs.table.clone().select(0, ids); // [b·n, m]
        let rows = match inputs.previous.clone() {
            Some(previous) => stem_rows(&self.dynamics.transformer, rows + previous), // [b·n, m]
            None => rows,
        }
        .reshape([b, n, m]); // [b, n, m]
        let action = inputs.action.clone().expect("start_frame ran"); // [b, 1, m]
        Tensor::cat(vec![action, rows], 1) // [b, n+1, m]
    }

    /// The previous-frame input of frame `f`'s token slots `[B·N, M]`: the embeddings of
    /// frames `f − 1, f − 2, …` (as deep as the model reaches; frames before 0 add nothing),
    /// for a model that takes one.
    fn previous_frame_input(&self, f: usize) -> Option<Tensor<2>> {
        let first = self.dynamics.previous_embed.as_ref()?.val(); // [v, m]
        let [b, _, n] = self.dims;
        let mut sum = Tensor::zeros([b * n, first.dims()[1]], &self.device); // [b·n, m]
        let ids = |v: Vec<i64>| Tensor::<1, Int>::from_data(TensorData::new(v, [b * n]), &self.device);
        for (back, table) in (1..=f).zip(self.dynamics.previous_frame_tables()) {
            let earlier = self.frame_tokens(f - back); // [b·n]
            if back == 1 {
                for (table, sources, on_grid) in self.dynamics.neighbour_reads(n) {
                    let read: Vec<i64> = (0..b)
                        .flat_map(|bi| {
                            sources.iter().map(|&s| earlier[bi * n + s as usize]).collect::<Vec<_>>()
                        })
                        .collect();
                    let on_grid =
                        Tensor::<1>::from_data(TensorData::new(on_grid.repeat(b), [b * n]), &self.device);
                    let around = table.val().select(0, ids(read)); // [b·n, m]
                    sum = sum + around * on_grid.reshape([b * n, 1]);
                }
            }
            sum = sum + table.val().select(0, ids(earlier)); // [b·n, m]
        }
        Some(sum)
    }

    /// The stemmed slot `pos` of frame `f` for causal decoding `[B, 1, M]`: the action slot
    /// (pos 0) or the row of token `pos − 1`.
    fn stemmed_slot(&self, f: usize, pos: usize) -> Tensor<3> {
        let [b, s, n] = self.dims;
        let inputs = self.stemmed.as_ref().expect("stemmed inputs on the cached path");
        if pos == 0 {
            return inputs.action.clone().expect("start_frame ran");
        }
        let m = inputs.table.dims()[1];
        let prev: Vec<i64> = (0..b).map(|bi| self.tokens[(bi * s + f) * n + pos - 1]).collect();
        let ids = Tensor::<1, Int>::from_data(TensorData::new(prev, [b]), &self.device);
        inputs.table.clone().select(0, ids).reshape([b, 1, m]) // [b, 1, m]
    }

    /// Tokens of frame `f` for every sample `[B, N]`.
    fn frame_tokens(&self, f: usize) -> Vec<i64> {
        let [b, s, n] = self.dims;
        (0..b).flat_map(|bi| self.tokens[(bi * s + f) * n..(bi * s + f + 1) * n].to_vec()).collect()
    }

    fn set_token(&mut self, bi: usize, f: usize, pos: usize, tok: i64) {
        let [_, s, n] = self.dims;
        self.tokens[(bi * s + f) * n + pos] = tok;
    }

    /// The action slot of frame `f` `[B, 1, M]`: zero for frame 0, `action_up(a_f)` otherwise.
    fn action_slot(&self, f: usize) -> Tensor<3> {
        let b = self.dims[0];
        let m = self.model_dim();
        if f == 0 {
            return Tensor::zeros([b, 1, m], &self.device);
        }
        let la = self.dynamics.action_dim();
        let a = self.actions.clone().slice([0..b, f - 1..f, 0..la]); // [b, 1, la]
        linear_rows(&self.dynamics.action_up, a) // [b, 1, m]
    }

    fn model_dim(&self) -> usize {
        self.dynamics.token_embed.shape().dims::<2>()[1]
    }

    /// Uncached logits of frame `f` `[B, N, V]`: the whole model on frames `0..=f`.
    fn uncached_logits(&self, f: usize, mask: Option<&[bool]>) -> Result<Tensor<3>, NnError> {
        let [b, s, n] = self.dims;
        let ids: Vec<i64> =
            (0..b).flat_map(|bi| self.tokens[bi * s * n..(bi * s + f + 1) * n].to_vec()).collect();
        let ids = Tensor::<3, Int>::from_data(TensorData::new(ids, [b, f + 1, n]), &self.device);
        let mask = mask.map(|frame_mask| {
            let mut full = vec![false; b * (f + 1) * n];
            for bi in 0..b {
                let dst = (bi * (f + 1) + f) * n;
                full[dst..dst + n].copy_from_slice(&frame_mask[bi * n..(bi + 1) * n]);
            }
            Tensor::<3, Bool>::from_data(TensorData::new(full, [b, f + 1, n]), &self.device)
        });
        let la = self.dynamics.action_dim();
        let actions = self.actions.clone().slice([0..b, 0..f, 0..la]);
        let logits = self.dynamics.logits(ids, actions, mask)?; // [b, f+1, n, v]
        let v = logits.dims()[3];
        Ok(logits.slice([0..b, f..f + 1, 0..n, 0..v]).reshape([b, n, v]))
    }

    /// Generates frame `f` with MaskGIT; returns the logits each token was fixed with
    /// `[B, N, V]` (host, row-major).
    fn maskgit_frame(&mut self, f: usize, cfg: &SamplerConfig) -> Result<Vec<f32>, NnError> {
        let [b, _, n] = self.dims;
        let v = self.dynamics.num_codes();
        let mut mask = vec![true; b * n]; // [b, n]
        let mut kept = vec![0.0f32; b * n * v];
        for step in 0..cfg.maskgit_steps {
            // (The cache is moved out while the stemmed input borrows the state.)
            let logits = match self.cache.take() {
                Some(mut cache) => {
                    let h = self.stemmed_frame(f, Some(&mask)); // [b, n+1, m]
                    let out = cache.forward_frame_stemmed(&self.dynamics.transformer, h);
                    self.cache = Some(cache);
                    out?.slice([0..b, 1..n + 1, 0..v])
                }
                None => self.uncached_logits(f, Some(&mask))?,
            }; // [b, n, v]
            let logits: Vec<f32> = logits.try_into_vec_as::<f32>().expect("float tensor data");
            let tau = cfg.temperature * (1.0 - maskgit_ratio(step, cfg.maskgit_steps));
            let keep = maskgit_keep_masked(n, step, cfg.maskgit_steps);
            for bi in 0..b {
                let mut confidences: Vec<(f64, usize)> = Vec::new();
                for pos in 0..n {
                    if !mask[bi * n + pos] {
                        continue;
                    }
                    let row = &logits[(bi * n + pos) * v..(bi * n + pos + 1) * v];
                    let (tok, p) = draw(row, tau, cfg.argmax, &mut self.rng);
                    self.set_token(bi, f, pos, tok as i64);
                    kept[(bi * n + pos) * v..(bi * n + pos + 1) * v].copy_from_slice(row);
                    confidences.push((p, pos));
                }
                // Re-mask the `keep` least confident of this frame's masked positions.
                confidences.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
                for (i, &(_, pos)) in confidences.iter().enumerate() {
                    mask[bi * n + pos] = i < keep;
                }
            }
        }
        // The final tokens' keys/values become part of the cached context.
        if let Some(mut cache) = self.cache.take() {
            let h = self.stemmed_frame(f, None); // [b, n+1, m]
            cache.commit_pass(&self.dynamics.transformer, h)?;
            self.cache = Some(cache);
        }
        Ok(kept)
    }

    /// Generates frame `f` token by token (causal dynamics); returns the logits `[B, N, V]`.
    fn causal_frame(&mut self, f: usize, cfg: &SamplerConfig) -> Result<Vec<f32>, NnError> {
        let [b, _, n] = self.dims;
        let v = self.dynamics.num_codes();
        let mut kept = vec![0.0f32; b * n * v];
        for pos in 0..n {
            // Slot `pos` holds the action (pos = 0) or token pos−1, and predicts token pos.
            let logits = match self.cache.take() {
                Some(mut cache) => {
                    let h = self.stemmed_slot(f, pos); // [b, 1, m]
                    let out = cache.forward_slot_stemmed(&self.dynamics.transformer, h, pos);
                    self.cache = Some(cache);
                    out?.reshape([b, v])
                }
                None => self.uncached_logits(f, None)?.slice([0..b, pos..pos + 1, 0..v]).reshape([b, v]),
            }; // [b, v]
            let logits: Vec<f32> = logits.try_into_vec_as::<f32>().expect("float tensor data");
            for bi in 0..b {
                let row = &logits[bi * v..(bi + 1) * v];
                let (tok, _) = draw(row, cfg.temperature, cfg.argmax, &mut self.rng);
                self.set_token(bi, f, pos, tok as i64);
                kept[(bi * n + pos) * v..(bi * n + pos + 1) * v].copy_from_slice(row);
            }
        }
        if let Some(cache) = self.cache.as_mut() {
            cache.commit_frame()?;
        }
        Ok(kept)
    }
}

/// The cosine schedule `r_s = cos(π(s+1)/(2·steps))` of MaskGIT step `step`.
pub fn maskgit_ratio(step: usize, steps: usize) -> f64 {
    (std::f64::consts::PI * (step + 1) as f64 / (2 * steps) as f64).cos()
}

/// How many of a frame's `n` positions stay masked after MaskGIT step `step`:
/// `n − round(n(1 − r_s))`, rounding half to even (the reference's count without its "+1"
/// slot outside the frame).
pub fn maskgit_keep_masked(n: usize, step: usize, steps: usize) -> usize {
    n - ((n as f64) * (1.0 - maskgit_ratio(step, steps))).round_ties_even() as usize
}

/// Draws a token from `logits / tau` (argmax when `argmax` or `tau == 0`); returns it with
/// its probability under the tempered distribution.
pub fn draw(logits: &[f32], tau: f64, argmax: bool, rng: &mut impl Rng) -> (usize, f64) {
    let best = (0..logits.len()).fold(0, |a, i| if logits[i] > logits[a] { i } else { a });
    if tau <= 0.0 {
        return (best, 1.0);
    }
    let max = logits[best] as f64;
    let weights: Vec<f64> = logits.iter().map(|&l| ((l as f64 - max) / tau).exp()).collect();
    let z: f64 = weights.iter().sum();
    let tok = if argmax {
        best
    } else {
        let mut u = rng.random::<f64>() * z;
        let mut pick = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if u < *w {
                pick = i;
                break;
            }
            u -= w;
        }
        pick
    };
    (tok, weights[tok] / z)
}

#[cfg(test)]
mod tests;
