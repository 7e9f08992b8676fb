//! Dynamics models over tokenizer codes (Jasmine's `DynamicsMaskGIT` and `DynamicsCausal` in
//! `jasmine/models/dynamics.py`): MaskGIT ([`maskgit`]) and
//! causal ([`causal`]) share this module's [`Dynamics`] network.
//!
//! Input building (both kinds): token embedding `[B, T, N, M]` (MaskGIT: masked positions
//! replaced by a learned mask token); the latent action of the transition *into* frame `t`,
//! projected `La → M`, is prepended as an extra spatial slot (a zero vector for frame 0)
//! → `[B, T, N+1, M]` → axial transformer → logits over the tokenizer codebook.
//!
//! [`Dynamics::logits`] is the entry point for samplers: token ids, actions and (MaskGIT) a
//! mask in, logits `[B, T, N, V]` out.

pub mod task;

pub mod causal;
mod config;
pub mod maskgit;
mod neighbours;
mod token_loss;

mod kinds;

pub use crate::dynamics_kinds::DynamicsKind;
pub use config::{DynamicsConfig, MaskGitConfig, TokenDynamicsConfig};
pub use kinds::{CAUSAL_ENTRY, MASKGIT_ENTRY};

pub use token_loss::changed_token_weights;

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Bool, Device, Distribution, Int, Tensor, TensorData};
use jinn_nn::init::{host_random, lazy_param, linear};
use jinn_nn::ops::linear_rows;
use jinn_nn::reversible::{forward_standard, ReversibleAxialBlock, ReversibleAxialConfig};
use jinn_nn::{AxialTransformer, AxialTransformerConfig, NnError};

impl DynamicsConfig {
    /// Build the network for a codebook of `num_codes` tokens and actions of width
    /// `action_dim` (token embedding ~ N(0, 1/M), mask token ~ U(−√3, √3), flax NNX defaults),
    /// without a patch grid (`previous_frame_radius` must be 0).
    pub fn init(&self, num_codes: usize, action_dim: usize, device: &Device) -> Result<Dynamics, NnError> {
        self.init_on_grid(num_codes, action_dim, 0, device)
    }

    /// [`DynamicsConfig::init`] for frames of a tokenizer whose patch grid has `grid_cols`
    /// columns (the slots of a frame are its patches, row-major).
    pub fn init_on_grid(
        &self,
        num_codes: usize,
        action_dim: usize,
        grid_cols: usize,
        device: &Device,
    ) -> Result<Dynamics, NnError> {
        let maskgit = self.maskgit();
        let Some(tokens) = self.tokens() else {
            return Err(NnError::InvalidConfig {
                field: "kind",
                reason: format!(
                    "`{}` dynamics do not predict tokenizer codes; build them through their kind's registry row",
                    self.kind()
                ),
            });
        };
        let mask_limit = maskgit.map_or(0.0, |c| c.mask_limit);
        let mask_ratio_per_frame = maskgit.is_some_and(|c| c.mask_ratio_per_frame);
        if !(0.0..1.0).contains(&mask_limit) {
            return Err(NnError::InvalidConfig {
                field: "mask_limit",
                reason: format!("must be in [0, 1), got {mask_limit}"),
            });
        }
        if !(tokens.z_loss_weight.is_finite() && tokens.z_loss_weight >= 0.0) {
            return Err(NnError::InvalidConfig {
                field: "z_loss_weight",
                reason: format!("must be ≥ 0, got {}", tokens.z_loss_weight),
            });
        }
        if !(tokens.changed_token_weight.is_finite() && tokens.changed_token_weight > 0.0) {
            return Err(NnError::InvalidConfig {
                field: "changed_token_weight",
                reason: format!("must be a positive number, got {}", tokens.changed_token_weight),
            });
        }
        if num_codes == 0 || action_dim == 0 {
            return Err(NnError::InvalidConfig {
                field: "num_codes/action_dim",
                reason: "must be positive".into(),
            });
        }
        let depth = maskgit.map_or(1, |c| c.previous_frame_depth);
        let previous_input = maskgit.is_some_and(|c| c.previous_frame_input);
        if depth == 0 || (!previous_input && depth != 1) {
            return Err(NnError::InvalidConfig {
                field: "previous_frame_depth",
                reason: format!("must be ≥ 1, and 1 without `previous_frame_input`; got {depth}"),
            });
        }
        let radius = maskgit.map_or(0, |c| c.previous_frame_radius);
        if radius > 0 && (!previous_input || grid_cols == 0) {
            return Err(NnError::InvalidConfig {
                field: "previous_frame_radius",
                reason: format!(
                    "{radius} needs `previous_frame_input` and the tokenizer's patch grid; set it to 0 or turn the input on"
                ),
            });
        }
        let own_share = maskgit.map_or(0.0, |c| c.previous_frame_own_share);
        if !(0.0..=1.0).contains(&own_share) || (own_share > 0.0 && !previous_input) {
            return Err(NnError::InvalidConfig {
                field: "previous_frame_own_share",
                reason: format!("must be in [0, 1], and 0 without `previous_frame_input`; got {own_share}"),
            });
        }
        let (v, m) = (num_codes, self.model_dim);
        let causal = maskgit.is_none();
        let std = 1.0 / (m as f64).sqrt();
        let token_embed =
            lazy_param([v, m], device, move |dev| host_random([v, m], Distribution::Normal(0.0, std), dev));
        let embedding = || {
            lazy_param([v, m], device, move |dev| host_random([v, m], Distribution::Normal(0.0, std), dev))
        };
        let previous_embed = previous_input.then(embedding);
        let earlier_embeds =
            if previous_input { (1..depth).map(|_| embedding()).collect() } else { Vec::new() };
        let neighbour_embeds = neighbours::offsets(radius).iter().map(|_| embedding()).collect();
        let bound = 3f64.sqrt();
        let mask_token = (!causal).then(|| {
            lazy_param([m], device, move |dev| host_random([m], Distribution::Uniform(-bound, bound), dev))
        });
        // A reversible model keeps the transformer's stem and head and replaces its blocks.
        let axial_blocks = if tokens.reversible { 0 } else { self.num_blocks };
        let transformer = AxialTransformerConfig::new(m, m, self.ffn_dim, v, axial_blocks, self.num_heads)
            .with_spatial_causal(causal)
            .with_temporal_causal(true)
            .init(device)?;
        let reversible_blocks = if tokens.reversible {
            ReversibleAxialConfig::new(m, self.ffn_dim, self.num_heads)
                .with_spatial_causal(causal)
                .with_temporal_causal(true)
                .init_stack(self.num_blocks, device)?
        } else {
            Vec::new()
        };
        Ok(Dynamics {
            token_embed,
            previous_embed,
            earlier_embeds,
            neighbour_embeds,
            grid_cols,
            previous_frame_radius: radius,
            mask_token,
            action_up: linear(action_dim, m, device),
            transformer,
            reversible_blocks,
            causal,
            mask_limit,
            mask_ratio_per_frame,
            previous_frame_own_share: own_share,
            z_loss_weight: tokens.z_loss_weight,
            changed_token_weight: tokens.changed_token_weight,
        })
    }
}

/// The dynamics network (see the module docs).
#[derive(Module, Debug)]
pub struct Dynamics {
    /// Token embedding `[V, M]`.
    pub token_embed: Param<Tensor<2>>,
    /// Embedding `[V, M]` of the previous frame's token at each position
    /// (`previous_frame_input`).
    pub previous_embed: Option<Param<Tensor<2>>>,
    /// Embeddings `[V, M]` of the tokens at each position in frames `t − 2, t − 3, …`
    /// (`previous_frame_depth − 1` tables; empty at depth 1).
    pub earlier_embeds: Vec<Param<Tensor<2>>>,
    /// Embeddings `[V, M]` of the tokens around each position in frame `t − 1`, one per
    /// offset of the previous-frame neighbourhood (`previous_frame_radius`; row-major offsets
    /// without the position itself).
    pub neighbour_embeds: Vec<Param<Tensor<2>>>,
    /// Columns of the tokenizer's patch grid (0 for a model built without one).
    pub grid_cols: usize,
    /// How far around its position a slot reads frame `t − 1` (0 = its own position only).
    pub previous_frame_radius: usize,
    /// Learned mask token `[M]` (MaskGIT only).
    pub mask_token: Option<Param<Tensor<1>>>,
    /// Action projection `La → M`.
    pub action_up: Linear,
    /// Axial transformer `M → V` (without blocks in a reversible model).
    pub transformer: AxialTransformer,
    /// The reversible backbone, run after the transformer's stem (empty unless
    /// `reversible`).
    pub reversible_blocks: Vec<ReversibleAxialBlock>,
    /// Causal dynamics (spatial causal attention, next-token targets) instead of MaskGIT.
    pub causal: bool,
    /// MaskGIT mask ratio lower bound (0 for causal dynamics, which mask nothing).
    pub mask_limit: f64,
    /// One MaskGIT mask ratio per frame instead of per clip.
    pub mask_ratio_per_frame: bool,
    /// Share of training clips whose previous-frame input reads the model's own predictions
    /// (see [`crate::dynamics::MaskGitConfig`]).
    pub previous_frame_own_share: f64,
    /// z-loss weight.
    pub z_loss_weight: f64,
    /// Loss weight of tokens changed since the previous frame (see [`DynamicsConfig`]).
    pub changed_token_weight: f64,
}

impl Dynamics {
    /// Codebook size `V`.
    pub fn num_codes(&self) -> usize {
        self.token_embed.shape().dims::<2>()[0]
    }

    /// Action width `La`.
    pub fn action_dim(&self) -> usize {
        self.action_up.weight.shape().dims::<2>()[0]
    }

    /// Which kind of dynamics this is.
    pub fn kind(&self) -> DynamicsKind {
        if self.causal {
            DynamicsKind::CAUSAL
        } else {
            DynamicsKind::MASKGIT
        }
    }

    /// Logits `[B, T, N, V]` for `tokens` `[B, T, N]` and the latent actions `[B, T−1, La]`
    /// of the transitions into frames `1..T−1`.
    ///
    /// MaskGIT: `mask` `[B, T, N]` (true = masked, replaced by the mask token; `None` = nothing
    /// masked); the logits at `(t, n)` predict token `(t, n)`. Causal: `mask` must be `None`;
    /// the logits at `(t, n)` predict token `(t, n)` from tokens `0..n−1` (see [`causal`]).
    pub fn logits(
        &self,
        tokens: Tensor<3, Int>,
        actions: Tensor<3>,
        mask: Option<Tensor<3, Bool>>,
    ) -> Result<Tensor<4>, NnError> {
        self.logits_with(tokens, actions, mask, &mut |x| self.backbone(x))
    }

    /// The blocks between the transformer's stem and head, on the autodiff tape: the axial
    /// blocks, then the reversible ones (one of the two is empty) `[B, T, N+1, M]`.
    pub fn backbone(&self, x: Tensor<4>) -> Tensor<4> {
        let x = self.transformer.blocks.iter().fold(x, |h, block| block.forward(h)); // [b, t, n+1, m]
        forward_standard(&self.reversible_blocks, x) // [b, t, n+1, m]
    }

    /// [`Dynamics::logits`] with the backbone run by `backbone` (e.g. the memory-free engine).
    pub fn logits_with(
        &self,
        tokens: Tensor<3, Int>,
        actions: Tensor<3>,
        mask: Option<Tensor<3, Bool>>,
        backbone: &mut dyn FnMut(Tensor<4>) -> Tensor<4>,
    ) -> Result<Tensor<4>, NnError> {
        self.logits_reading(tokens.clone(), tokens, actions, mask, backbone)
    }

    /// [`Dynamics::logits_with`] with the previous-frame input read from `previous` `[B, T, N]`
    /// instead of `tokens` (`previous_frame_own_share`).
    pub fn logits_reading(
        &self,
        tokens: Tensor<3, Int>,
        previous: Tensor<3, Int>,
        actions: Tensor<3>,
        mask: Option<Tensor<3, Bool>>,
        backbone: &mut dyn FnMut(Tensor<4>) -> Tensor<4>,
    ) -> Result<Tensor<4>, NnError> {
        let [b, t, n] = tokens.dims();
        self.check_inputs([b, t, n], &actions, mask.as_ref())?;
        let m = self.token_embed.shape().dims::<2>()[1];
        let emb = self.token_embed.val().select(0, tokens.reshape([b * t * n])).reshape([b, t, n, m]); // [b, t, n, m]
        let emb = match (&self.mask_token, mask) {
            (Some(token), Some(mask)) => {
                let token = token.val().reshape([1, 1, 1, m]).repeat(&[b, t, n, 1]); // [b, t, n, m]
                emb.mask_where(mask.unsqueeze_dim::<4>(3).repeat_dim(3, m), token)
            }
            _ => emb,
        };
        let emb = match self.previous_frame_rows(&previous) {
            Some(previous) => emb + previous, // [b, t, n, m]
            None => emb,
        };
        let slot = self.action_slot(actions, [b, t, m]); // [b, t, 1, m]
        let x = Tensor::cat(vec![slot, emb], 2); // [b, t, n+1, m]
        let out = self.transformer.head(backbone(self.transformer.stem(x))); // [b, t, n+1, v]
        let v = out.dims()[3];
        // MaskGIT reads slots 1..=N (the tokens); causal reads slots 0..N (slot n sees ≤ n).
        let first = if self.causal { 0 } else { 1 };
        Ok(out.slice([0..b, 0..t, first..first + n, 0..v])) // [b, t, n, v]
    }

    /// The previous-frame input of every slot `[B, T, N, M]` for `tokens` `[B, T, N]`: row
    /// `(t, n)` sums the embeddings of tokens `(t − k, n)`, `k = 1..=depth`, each through its
    /// own table; a frame before 0 adds nothing (`None` without `previous_frame_input`).
    pub fn previous_frame_rows(&self, tokens: &Tensor<3, Int>) -> Option<Tensor<4>> {
        let first = self.previous_embed.as_ref()?.val(); // [v, m]
        let [b, t, n] = tokens.dims();
        let m = first.dims()[1];
        let device = first.device();
        let mut sum = Tensor::<4>::zeros([b, t, n, m], &device).cast(first.dtype()); // [b, t, n, m]
        for (back, table) in (1..t).zip(self.previous_frame_tables()) {
            let earlier = tokens.clone().slice([0..b, 0..t - back, 0..n]); // [b, t−back, n]
            let ids = earlier.clone().reshape([b * (t - back) * n]);
            let mut rows = table.val().select(0, ids).reshape([b, t - back, n, m]); // [b, t−back, n, m]
            if back == 1 {
                for (table, sources, on_grid) in self.neighbour_reads(n) {
                    let sources = Tensor::<1, Int>::from_data(TensorData::new(sources, [n]), &device);
                    let ids = earlier.clone().select(2, sources).reshape([b * (t - 1) * n]);
                    let on_grid = Tensor::<1>::from_data(TensorData::new(on_grid, [n]), &device)
                        .cast(rows.dtype())
                        .reshape([1, 1, n, 1]);
                    let around = table.val().select(0, ids).reshape([b, t - 1, n, m]); // [b, t−1, n, m]
                    rows = rows + around * on_grid;
                }
            }
            let zeros = Tensor::<4>::zeros([b, back, n, m], &device).cast(rows.dtype()); // [b, back, n, m]
            sum = sum + Tensor::cat(vec![zeros, rows], 1);
        }
        Some(sum)
    }

    /// The neighbourhood reads of frame `t − 1` for a frame of `n` slots: per offset, its
    /// table, the slot each slot reads and whether that slot lies on the grid (1 or 0).
    pub fn neighbour_reads(&self, n: usize) -> Vec<(&Param<Tensor<2>>, Vec<i64>, Vec<f32>)> {
        let offsets = neighbours::offsets(self.previous_frame_radius);
        self.neighbour_embeds
            .iter()
            .zip(offsets)
            .map(|(table, offset)| {
                let (sources, on_grid) = neighbours::sources(n, self.grid_cols, offset);
                (table, sources, on_grid)
            })
            .collect()
    }

    /// The previous-frame tables, nearest frame first (`t − 1`, `t − 2`, …; empty without
    /// `previous_frame_input`).
    pub fn previous_frame_tables(&self) -> impl Iterator<Item = &Param<Tensor<2>>> {
        self.previous_embed.iter().chain(&self.earlier_embeds)
    }

    /// The action slot `[B, T, 1, M]` ([`action_slots`]).
    fn action_slot(&self, actions: Tensor<3>, dims: [usize; 3]) -> Tensor<4> {
        action_slots(&self.action_up, actions, dims)
    }

    fn check_inputs(
        &self,
        [b, t, n]: [usize; 3],
        actions: &Tensor<3>,
        mask: Option<&Tensor<3, Bool>>,
    ) -> Result<(), NnError> {
        if self.previous_frame_radius > 0 && n % self.grid_cols != 0 {
            return Err(NnError::Shape {
                what: "tokens per frame",
                expected: format!("a multiple of the patch grid's {} columns", self.grid_cols),
                got: n.to_string(),
            });
        }
        let want = [b, t.saturating_sub(1), self.action_dim()];
        if t == 0 || n == 0 || (t > 1 && actions.dims() != want) {
            return Err(NnError::Shape {
                what: "latent actions [B, T−1, La]",
                expected: format!("{want:?} for tokens [{b}, {t}, {n}]"),
                got: format!("{:?}", actions.dims()),
            });
        }
        match (mask, self.causal) {
            (Some(_), true) => {
                Err(NnError::InvalidConfig { field: "mask", reason: "causal dynamics take no mask".into() })
            }
            (Some(mk), false) if mk.dims() != [b, t, n] => Err(NnError::Shape {
                what: "mask [B, T, N]",
                expected: format!("[{b}, {t}, {n}]"),
                got: format!("{:?}", mk.dims()),
            }),
            _ => Ok(()),
        }
    }
}

/// The action slot of every frame `[B, T, 1, W]` for actions `[B, T−1, La]`: zero for frame 0,
/// `action_up(a_t)` (`La → W`) for frame `t ≥ 1` (as Jasmine's `DynamicsMaskGIT` and `DynamicsCausal` add the projected action).
pub(crate) fn action_slots(action_up: &Linear, actions: Tensor<3>, [b, t, w]: [usize; 3]) -> Tensor<4> {
    let zero = Tensor::<4>::zeros([b, 1, 1, w], &actions.device()).cast(actions.dtype()); // [b, 1, 1, w]
    if t == 1 {
        return zero;
    }
    let la = actions.dims()[2];
    let up = linear_rows(action_up, actions.reshape([b, t - 1, 1, la])); // [b, t−1, 1, w]
    Tensor::cat(vec![zero, up], 1) // [b, t, 1, w]
}

/// Host-side metrics of token predictions over the positions where `weight` is true:
/// top-1/2/5 accuracy, mean predictive entropy (nats), mean max probability.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenMetrics {
    /// Fraction of counted positions whose target is the most likely token.
    pub top1: f64,
    /// … among the 2 most likely.
    pub top2: f64,
    /// … among the 5 most likely.
    pub top5: f64,
    /// Mean entropy of the predictive distribution.
    pub entropy: f64,
    /// Mean probability of the most likely token.
    pub select_p: f64,
    /// Positions counted.
    pub count: usize,
}

impl TokenMetrics {
    /// Metrics of `logits` `[D, V]` (row-major) against `targets` `[D]` where `weight[d]`.
    pub fn compute(logits: &[f32], targets: &[i64], weight: &[bool], v: usize) -> TokenMetrics {
        let mut m = TokenMetrics::default();
        for ((row, &target), _) in logits.chunks(v).zip(targets).zip(weight).filter(|(_, &w)| w) {
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            let z: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
            let entropy: f64 = row
                .iter()
                .map(|&x| {
                    let p = (x as f64 - max).exp() / z;
                    if p > 0.0 {
                        -p * p.ln()
                    } else {
                        0.0
                    }
                })
                .sum();
            let tv = row[target as usize];
            // Rank = how many tokens score strictly higher than the target (ties favour it).
            let rank = row.iter().filter(|&&x| x > tv).count();
            m.top1 += (rank < 1) as u8 as f64;
            m.top2 += (rank < 2) as u8 as f64;
            m.top5 += (rank < 5) as u8 as f64;
            m.entropy += entropy;
            m.select_p += 1.0 / z;
            m.count += 1;
        }
        let c = m.count.max(1) as f64;
        TokenMetrics {
            top1: m.top1 / c,
            top2: m.top2 / c,
            top5: m.top5 / c,
            entropy: m.entropy / c,
            select_p: m.select_p / c,
            count: m.count,
        }
    }
}

#[cfg(test)]
mod tests;
