//! World-model evaluation (`jinn eval world`): how well a trained world model predicts and how
//! much its actions matter, on clips of `C + G` ground-truth frames.
//!
//! * **Next frame** (teacher-forced, one step): for every target frame `t ∈ C..C+G`, the
//!   sampler generates frame `t` from the true frames `0..t`; PSNR/SSIM of that frame.
//! * **Rollout**: from the `C` true context frames the sampler generates all `G` frames,
//!   driven by the actions the model's action source infers from the true clip (LAM codes,
//!   or the recorded actions for `--actions gt` models); PSNR/SSIM per generated frame.
//! * **Controllability** (Genie paper, ΔPSNR): the same rollout with the same sampler seed
//!   but uniformly random actions (random LAM codes / action ids) for the generated frames;
//!   `ΔPSNR = PSNR(truth, rollout) − PSNR(truth, random-action rollout)`, per frame and mean.
//! * **LAM / true-action agreement**: normalised mutual information ([`crate::nmi`],
//!   geometric normalisation `I/sqrt(H·H)`, arithmetic reported too) between the LAM code of
//!   transition `t → t+1` and the action the dataset records at frame `t` (taken at `t`),
//!   over every transition of every clip. Absent for models without a LAM or data without
//!   one discrete action per frame.
//!
//! Works for every world model ([`World`]): token models (MaskGIT, causal) and diffusion
//! models, so the dynamics kinds can be compared on the same clips with the same metrics.
//!
//! * **Objects** (built-in games, [`objects`]): ball recall and hallucination, ball, paddle
//!   and brick errors (breakout), view displacement and coins (maze), off-palette pixels — for
//!   the rollout, the random-action rollout, the teacher-forced next frames (one step from the
//!   truth: what a rollout's errors grow from), a copy of the last context frame (the baseline
//!   a model must beat) and the tokenizer's reconstruction of the true clip (the ceiling).
//!
//! Frames are decoded by the tokenizer over the whole sequence (its temporal attention is
//! causal, so a frame is decoded with its predecessors as context), rounded to `u8` as in
//! `jinn sample`, and scored with [`jinn_data::metrics`].

pub mod clip_spread;
pub mod objects;

use crate::data::{model_err, to_u8};
use crate::nmi::{code_action_counts, nmi, pair_transitions, Normalisation};
use crate::sample::SamplerConfig;
use crate::tokenizer::frames_to_unit;
use crate::world_model::World;
use burn::tensor::{Int, Tensor, TensorData};
use jinn_data::loader::Batch;
use jinn_data::metrics::{psnr, ssim};
use jinn_data::objects::Game;
use jinn_data::FrameShape;
use jinn_train::{Result, TrainError};
use objects::{serve_transitions, ObjectMetrics, ObjectTally};
use rand::Rng;
use serde::Serialize;

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct WorldEvalConfig {
    /// True context frames `C` (≥ 1).
    pub context: usize,
    /// Generated frames `G` (≥ 1); clips must hold `C + G` frames.
    pub frames: usize,
    /// Sampler settings; batch `i` samples with seed `sampler.seed + i` (the same for the
    /// inferred- and random-action rollouts), random actions come from `sampler.seed` too.
    pub sampler: SamplerConfig,
    /// The built-in game the frames show, for the object scores (`None`: no object scores).
    pub game: Option<Game>,
}

/// Object tallies of the five kinds of generated frames (see the module docs).
#[derive(Debug, Clone)]
struct ObjectTallies {
    rollout: ObjectTally,
    random_actions: ObjectTally,
    next_frame: ObjectTally,
    copy_last_frame: ObjectTally,
    reconstruction: ObjectTally,
}

/// Object scores of the rollout, the random-action rollout, the teacher-forced next frames,
/// the copy-the-last-frame baseline and the tokenizer's reconstruction of the true frames.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldObjectMetrics {
    /// The game the detector read (`breakout`, `maze`).
    pub game: String,
    /// Rollout under the model's own actions (as the rollout PSNR).
    pub rollout: ObjectMetrics,
    /// Rollout under uniformly random actions.
    pub random_actions: ObjectMetrics,
    /// Every generated frame predicted from the true frames before it (one step, as the
    /// next-frame PSNR): the model's error per step, before a rollout compounds it.
    pub next_frame: ObjectMetrics,
    /// Every generated frame a copy of the last context frame.
    pub copy_last_frame: ObjectMetrics,
    /// The tokenizer's reconstruction of the true frames.
    pub reconstruction: ObjectMetrics,
}

/// Running sums over evaluated clips (see [`WorldEval::add_batch`]).
#[derive(Debug, Clone)]
pub struct WorldEval {
    cfg: WorldEvalConfig,
    clips: usize,
    batches: u64,
    /// Per generated frame `[G]` sums over clips.
    next_psnr: Vec<f64>,
    next_ssim: Vec<f64>,
    rollout_psnr: Vec<f64>,
    rollout_ssim: Vec<f64>,
    random_psnr: Vec<f64>,
    random_ssim: Vec<f64>,
    /// Per-frame sums of the copy-last-context-frame baseline.
    copy_psnr: Vec<f64>,
    copy_ssim: Vec<f64>,
    /// `(LAM code, recorded action)` of every transition seen.
    lam_codes: Vec<i64>,
    true_actions: Vec<i64>,
    /// Breakout: whether the frames show each of those transitions as a serve.
    serves: Vec<bool>,
    objects: Option<ObjectTallies>,
}

/// Results of a world-model evaluation (means over clips; per-frame lists are indexed by
/// generated frame `0..G`, i.e. clip frame `C + i`).
#[derive(Debug, Clone, Serialize)]
pub struct WorldMetrics {
    /// Clips evaluated.
    pub clips: usize,
    /// Context frames.
    pub context: usize,
    /// Generated frames.
    pub frames: usize,
    /// Mean teacher-forced next-frame PSNR (dB).
    pub next_frame_psnr: f64,
    /// Mean teacher-forced next-frame SSIM.
    pub next_frame_ssim: f64,
    /// Teacher-forced next-frame PSNR per generated frame.
    pub next_frame_psnr_per_frame: Vec<f64>,
    /// Mean rollout PSNR (dB) with inferred actions.
    pub rollout_psnr: f64,
    /// Mean rollout SSIM with inferred actions.
    pub rollout_ssim: f64,
    /// Rollout PSNR per generated frame.
    pub rollout_psnr_per_frame: Vec<f64>,
    /// Rollout SSIM per generated frame.
    pub rollout_ssim_per_frame: Vec<f64>,
    /// Mean rollout PSNR with uniformly random actions.
    pub random_action_psnr: f64,
    /// Mean rollout SSIM with uniformly random actions.
    pub random_action_ssim: f64,
    /// Mean PSNR of copying the last context frame into every generated frame: the baseline
    /// a rollout must beat (a static scene scores well here).
    pub copy_last_frame_psnr: f64,
    /// Mean SSIM of the same copy.
    pub copy_last_frame_ssim: f64,
    /// Controllability `rollout_psnr − random_action_psnr` (dB).
    pub delta_psnr: f64,
    /// ΔPSNR per generated frame.
    pub delta_psnr_per_frame: Vec<f64>,
    /// NMI (geometric: `I/sqrt(H(codes)·H(actions))`) of LAM codes and recorded actions.
    pub nmi: Option<f64>,
    /// The same NMI with arithmetic normalisation `I/((H + H)/2)`.
    pub nmi_arithmetic: Option<f64>,
    /// Transitions the NMI was computed over.
    pub nmi_transitions: usize,
    /// How often each LAM code (row) met each recorded action (column) over those
    /// transitions; `None` without recorded actions.
    pub code_action_counts: Option<Vec<Vec<usize>>>,
    /// Breakout: how many of each LAM code's transitions (row of `code_action_counts`) the
    /// frames show as a serve (the ball launched from the paddle).
    pub code_serve_counts: Option<Vec<usize>>,
    /// Object scores, when the frames show a built-in game.
    pub objects: Option<WorldObjectMetrics>,
}

impl WorldEval {
    /// Empty sums; errors on a zero context or frame count.
    pub fn new(cfg: WorldEvalConfig) -> Result<Self> {
        if cfg.context == 0 || cfg.frames == 0 {
            return Err(TrainError::config(
                "context/frames",
                format!("need ≥ 1 context and ≥ 1 generated frame, got {} and {}", cfg.context, cfg.frames),
            ));
        }
        let g = cfg.frames;
        let objects = cfg.game.map(|game| ObjectTallies {
            rollout: ObjectTally::new(game, g),
            random_actions: ObjectTally::new(game, g),
            next_frame: ObjectTally::new(game, g),
            copy_last_frame: ObjectTally::new(game, g),
            reconstruction: ObjectTally::new(game, g),
        });
        Ok(WorldEval {
            cfg,
            clips: 0,
            batches: 0,
            next_psnr: vec![0.0; g],
            next_ssim: vec![0.0; g],
            rollout_psnr: vec![0.0; g],
            rollout_ssim: vec![0.0; g],
            random_psnr: vec![0.0; g],
            random_ssim: vec![0.0; g],
            copy_psnr: vec![0.0; g],
            copy_ssim: vec![0.0; g],
            lam_codes: Vec::new(),
            true_actions: Vec::new(),
            serves: Vec::new(),
            objects,
        })
    }

    /// Clips added so far.
    pub fn clips(&self) -> usize {
        self.clips
    }

    /// Transitions paired with a LAM code so far (from [`WorldEval::add_batch`] and
    /// [`WorldEval::add_lam_codes`]).
    pub fn lam_transitions(&self) -> usize {
        self.lam_codes.len()
    }

    /// Only the LAM/true-action pairs of the first `clips` clips of `batch` (no sampling):
    /// the NMI is cheap, so it can be measured on many more clips than the rollouts. A model
    /// without a LAM or a batch without recorded actions adds nothing.
    pub fn add_lam_codes(&mut self, world: &dyn World, batch: &Batch, clips: usize) -> Result<()> {
        let (b, s) = (clips.min(batch.batch_size), batch.seq_len);
        let Some(recorded) = recorded_actions(batch, b).filter(|_| b > 0) else {
            return Ok(());
        };
        let shape = batch.frame_shape;
        let device = world.device();
        let frames = &batch.videos[..b * s * shape.frame_bytes()]; // [b, s, h, w, c] u8
        let videos = frames_to_unit(frames, [b, s, shape.height, shape.width, shape.channels], &device);
        let recorded_t = Tensor::<2, Int>::from_data(TensorData::new(recorded.clone(), [b, s]), &device);
        let (_, lam_ids) =
            world.latent_actions(videos, Some(recorded_t), self.cfg.sampler.window).map_err(model_err)?;
        self.pair_codes(lam_ids, Some(&recorded), frames, shape, [b, s])
    }

    /// Pair the LAM codes `[b·(s−1)]` (when the model has a LAM) with the recorded actions
    /// `[b, s]` (when the data has them) and, on breakout, with the serves `frames`
    /// (`[b, s, h, w, c]` u8) show.
    fn pair_codes(
        &mut self,
        lam_ids: Option<Tensor<1, Int>>,
        recorded: Option<&[i64]>,
        frames: &[u8],
        shape: FrameShape,
        [b, s]: [usize; 2],
    ) -> Result<()> {
        let (Some(ids), Some(recorded)) = (lam_ids, recorded) else {
            return Ok(());
        };
        let ids: Vec<i64> = ids.try_into_vec_as::<i64>().expect("integer tensor data"); // [b·(s−1)]
        pair_transitions(&ids, recorded, b, s, &mut self.lam_codes, &mut self.true_actions);
        if self.cfg.game == Some(Game::Breakout) {
            let serves = serve_transitions(frames, shape, [b, s])
                .map_err(|e| TrainError::config("objects", e.to_string()))?;
            self.serves.extend(serves);
        }
        Ok(())
    }

    /// Evaluate the first `clips` clips of `batch` (clips of exactly `C + G` frames) with
    /// `world` (a [`crate::Genie`], a [`crate::DiffusionGenie`], any [`World`]).
    pub fn add_batch(&mut self, world: &dyn World, batch: &Batch, clips: usize) -> Result<()> {
        let (c, g) = (self.cfg.context, self.cfg.frames);
        let s = c + g;
        if batch.seq_len != s {
            return Err(TrainError::config(
                "data",
                format!("clips hold {} frames, expected context + frames = {s}", batch.seq_len),
            ));
        }
        let b = clips.min(batch.batch_size);
        if b == 0 {
            return Ok(());
        }
        let shape = batch.frame_shape;
        let grid = world.grid();
        if (shape.height, shape.width, shape.channels) != (grid.height, grid.width, grid.channels) {
            return Err(TrainError::config(
                "data",
                format!(
                    "frames are {}×{}×{} but the model was trained on {}×{}×{}",
                    shape.height, shape.width, shape.channels, grid.height, grid.width, grid.channels
                ),
            ));
        }
        let device = world.device();
        let fb = shape.frame_bytes();
        let truth = &batch.videos[..b * s * fb]; // [b, s, h, w, c] u8
        let videos = frames_to_unit(truth, [b, s, shape.height, shape.width, shape.channels], &device);
        let recorded = recorded_actions(batch, b); // [b, s] host, when one id per frame
        let recorded_t = recorded
            .as_ref()
            .map(|ids| Tensor::<2, Int>::from_data(TensorData::new(ids.clone(), [b, s]), &device));
        let window = self.cfg.sampler.window;
        let encoded = world.encode(videos.clone(), window).map_err(model_err)?; // tokens [b, s, n] or latents [b, s, n, l]
        let (actions, lam_ids) = world.latent_actions(videos, recorded_t, window).map_err(model_err)?; // [b, s−1, la]
        self.pair_codes(lam_ids, recorded.as_deref(), truth, shape, [b, s])?;

        let sampler = SamplerConfig {
            seed: self.cfg.sampler.seed.wrapping_add(self.batches),
            ..self.cfg.sampler.clone()
        };
        let context = encoded.first_frames(c);

        // Rollout with the inferred actions.
        let decoded = to_u8(world.rollout(context.clone(), actions.clone(), s, &sampler).map_err(model_err)?);
        score_frames(truth, &decoded, shape, [b, s], c..s, &mut self.rollout_psnr, &mut self.rollout_ssim)?;
        let copied = copy_last_frame(truth, fb, [b, s], c); // [b, s, h, w, c] u8
        score_frames(truth, &copied, shape, [b, s], c..s, &mut self.copy_psnr, &mut self.copy_ssim)?;
        let object_err = |e: jinn_data::DataError| TrainError::config("objects", e.to_string());
        if let Some(o) = &mut self.objects {
            o.rollout.add(truth, &decoded, shape, [b, s], c).map_err(object_err)?;
            o.copy_last_frame.add(truth, &copied, shape, [b, s], c).map_err(object_err)?;
            let reconstruction = to_u8(world.decode(encoded.clone(), window).map_err(model_err)?);
            o.reconstruction.add(truth, &reconstruction, shape, [b, s], c).map_err(object_err)?;
        }

        // The same rollout under uniformly random actions for the generated frames.
        let random = random_actions(world, actions.clone(), c, self.cfg.sampler.seed, self.batches);
        let decoded = to_u8(world.rollout(context, random, s, &sampler).map_err(model_err)?);
        score_frames(truth, &decoded, shape, [b, s], c..s, &mut self.random_psnr, &mut self.random_ssim)?;
        if let Some(o) = &mut self.objects {
            o.random_actions.add(truth, &decoded, shape, [b, s], c).map_err(object_err)?;
        }

        // Teacher-forced next frame: frame t from the true frames 0..t.
        let la = actions.dims()[2];
        let mut next_frames = truth.to_vec(); // [b, s, h, w, c] u8, frames c.. replaced below
        for t in c..s {
            let acts = actions.clone().slice([0..b, 0..t, 0..la]);
            let decoded =
                to_u8(world.rollout(encoded.first_frames(t), acts, t + 1, &sampler).map_err(model_err)?); // [b, t+1, …]
            let (mut p, mut q) = (vec![0.0], vec![0.0]);
            let frames_truth: Vec<u8> =
                (0..b).flat_map(|bi| truth[(bi * s) * fb..(bi * s + t + 1) * fb].iter().copied()).collect(); // [b, t+1, h, w, c]
            score_frames(&frames_truth, &decoded, shape, [b, t + 1], t..t + 1, &mut p, &mut q)?;
            self.next_psnr[t - c] += p[0];
            self.next_ssim[t - c] += q[0];
            for bi in 0..b {
                let from = (bi * (t + 1) + t) * fb;
                next_frames[(bi * s + t) * fb..(bi * s + t + 1) * fb]
                    .copy_from_slice(&decoded[from..from + fb]);
            }
        }
        if let Some(o) = &mut self.objects {
            o.next_frame.add(truth, &next_frames, shape, [b, s], c).map_err(object_err)?;
        }
        self.clips += b;
        self.batches += 1;
        Ok(())
    }

    /// Serves per LAM code, one entry per row of the code/action table.
    fn code_serve_counts(&self) -> Vec<usize> {
        let rows = self.lam_codes.iter().copied().max().map_or(0, |m| (m.max(-1) + 1) as usize);
        let mut counts = vec![0; rows];
        for (&code, _) in self.lam_codes.iter().zip(&self.serves).filter(|(&c, &serve)| serve && c >= 0) {
            counts[code as usize] += 1;
        }
        counts
    }

    /// Means over the clips added.
    pub fn finish(&self) -> Result<WorldMetrics> {
        if self.clips == 0 {
            return Err(TrainError::config("data", "no clips were evaluated"));
        }
        let k = self.clips as f64;
        let per_frame = |sums: &[f64]| sums.iter().map(|v| v / k).collect::<Vec<_>>();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let rollout_psnr = per_frame(&self.rollout_psnr);
        let random_psnr = per_frame(&self.random_psnr);
        let delta: Vec<f64> = rollout_psnr.iter().zip(&random_psnr).map(|(a, r)| a - r).collect();
        let (nmi_g, nmi_a) = if self.lam_codes.is_empty() {
            (None, None)
        } else {
            let agreement = |norm| nmi(&self.lam_codes, &self.true_actions, norm);
            let g =
                agreement(Normalisation::Geometric).map_err(|e| TrainError::config("nmi", e.to_string()))?;
            let a =
                agreement(Normalisation::Arithmetic).map_err(|e| TrainError::config("nmi", e.to_string()))?;
            (Some(g), Some(a))
        };
        Ok(WorldMetrics {
            clips: self.clips,
            context: self.cfg.context,
            frames: self.cfg.frames,
            next_frame_psnr: mean(&per_frame(&self.next_psnr)),
            next_frame_ssim: mean(&per_frame(&self.next_ssim)),
            next_frame_psnr_per_frame: per_frame(&self.next_psnr),
            rollout_psnr: mean(&rollout_psnr),
            rollout_ssim: mean(&per_frame(&self.rollout_ssim)),
            random_action_psnr: mean(&random_psnr),
            random_action_ssim: mean(&per_frame(&self.random_ssim)),
            copy_last_frame_psnr: mean(&per_frame(&self.copy_psnr)),
            copy_last_frame_ssim: mean(&per_frame(&self.copy_ssim)),
            delta_psnr: mean(&delta),
            delta_psnr_per_frame: delta,
            rollout_psnr_per_frame: rollout_psnr,
            rollout_ssim_per_frame: per_frame(&self.rollout_ssim),
            nmi: nmi_g,
            nmi_arithmetic: nmi_a,
            nmi_transitions: self.lam_codes.len(),
            code_action_counts: (!self.lam_codes.is_empty())
                .then(|| code_action_counts(&self.lam_codes, &self.true_actions)),
            code_serve_counts: (!self.serves.is_empty()).then(|| self.code_serve_counts()),
            objects: self.objects.as_ref().map(|o| WorldObjectMetrics {
                game: o.rollout.game().name().to_string(),
                rollout: o.rollout.finish(),
                random_actions: o.random_actions.finish(),
                next_frame: o.next_frame.finish(),
                copy_last_frame: o.copy_last_frame.finish(),
                reconstruction: o.reconstruction.finish(),
            }),
        })
    }
}

/// `truth` `[b, s, h, w, c]` u8 with every frame from `context` on replaced by the last
/// context frame of its clip.
fn copy_last_frame(truth: &[u8], fb: usize, [b, s]: [usize; 2], context: usize) -> Vec<u8> {
    let mut out = truth[..b * s * fb].to_vec();
    for bi in 0..b {
        let last = (bi * s + context - 1) * fb;
        for t in context..s {
            out.copy_within(last..last + fb, (bi * s + t) * fb);
        }
    }
    out
}

/// The batch's recorded actions of the first `b` clips `[b, S]` when it records exactly one
/// discrete action per frame; `None` otherwise.
fn recorded_actions(batch: &Batch, b: usize) -> Option<Vec<i64>> {
    match &batch.actions {
        Some(ids) if batch.action_dims == 1 => Some(ids[..b * batch.seq_len].to_vec()),
        _ => None,
    }
}

/// `actions` `[B, S−1, La]` with the transitions into generated frames (rows `C−1..`)
/// replaced by uniformly random entries of the model's action table (LAM codebook or
/// recorded-action embeddings); rows of transitions inside the context are kept.
fn random_actions(world: &dyn World, actions: Tensor<3>, context: usize, seed: u64, batch: u64) -> Tensor<3> {
    let [b, sm1, la] = actions.dims();
    let table = world.action_table(); // [k, la]
    let k = table.dims()[0];
    let mut rng = jinn_data::rng::rng_for(seed, "world-eval-random-actions", batch);
    let g = sm1 + 1 - context;
    let ids: Vec<i64> = (0..b * g).map(|_| rng.random_range(0..k) as i64).collect();
    let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [b * g]), &actions.device());
    let random = table.select(0, ids).reshape([b, g, la]); // [b, g, la]
    let kept = actions.slice([0..b, 0..context - 1, 0..la]); // [b, c−1, la]
    Tensor::cat(vec![kept, random], 1) // [b, s−1, la]
}

/// Add PSNR/SSIM of frames `range` of `b` clips (`[b, s, h, w, c]` u8, truth vs generated)
/// to the per-frame sums (index `t − range.start`). Identical frames (a copied frame of a
/// static scene) count the largest finite PSNR of the frame size, that of one value off by one
/// unit ([`finite_psnr_cap`]), so means stay finite.
fn score_frames(
    truth: &[u8],
    generated: &[u8],
    shape: FrameShape,
    [b, s]: [usize; 2],
    range: std::ops::Range<usize>,
    psnr_sums: &mut [f64],
    ssim_sums: &mut [f64],
) -> Result<()> {
    let fb = shape.frame_bytes();
    for bi in 0..b {
        for t in range.clone() {
            let at = (bi * s + t) * fb..(bi * s + t + 1) * fb;
            let p = psnr(&truth[at.clone()], &generated[at.clone()], shape)?;
            psnr_sums[t - range.start] += p.min(finite_psnr_cap(shape));
            ssim_sums[t - range.start] += ssim(&truth[at.clone()], &generated[at], shape)?;
        }
    }
    Ok(())
}

/// The PSNR (dB) of two u8 frames of `shape` that differ by one unit in one value:
/// `10·log10(255² · H·W·C)`, the largest below infinity.
fn finite_psnr_cap(shape: FrameShape) -> f64 {
    10.0 * (255.0f64 * 255.0 * shape.frame_bytes() as f64).log10()
}

#[cfg(test)]
mod tests;
