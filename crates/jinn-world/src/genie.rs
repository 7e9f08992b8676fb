//! The Genie world model (Jasmine's `GenieMaskGIT` and `restore_genie_components` in
//! `jasmine/models/genie.py`): a tokenizer, an action source (a LAM or
//! ground-truth action embeddings) and a dynamics model, trained on the dynamics loss.
//!
//! * The tokenizer, and a LAM given as a checkpoint, are loaded from their run directories
//!   (the newest checkpoint that verifies) with the configs stored in those checkpoints, and
//!   frozen: their parameters do not require gradients, so the optimiser never sees them (no
//!   updates, no weight decay — Jasmine decays them; a deliberate difference).
//! * Without a LAM checkpoint the LAM (encoder side) is co-trained from scratch by the
//!   dynamics loss alone, through the quantiser's straight-through estimator (no VQ losses,
//!   no dead-code reset), as in Jasmine.
//! * With `--actions gt` an embedding table `[num_actions, La]` (N(0, 1/La)) replaces the LAM;
//!   the recorded action at frame `t` (taken at `t`, causing `t → t+1`) conditions frame `t+1`.
//!
//! The whole model, frozen parts included, is saved in every dynamics checkpoint together with
//! the resolved [`GenieConfig`], so [`load_genie`] rebuilds it from the dynamics run alone.

use crate::code_partners::CodeGrounding;
use crate::dynamics::{causal, changed_token_weights, maskgit, Dynamics, DynamicsConfig};
use crate::lam::{Lam, LamConfig};
use crate::mae::MaeTokenizer;
use crate::tokenizer::TOKENIZER_KIND;
use crate::tokenizer::{Tokenizer, TokenizerConfig, TokenizerKind};
use burn::module::{Module, Param};
use burn::tensor::{Bool, Device, Distribution, FloatDType, Int, Tensor, TensorData};
use jinn_data::rng::SampleStreams;
use jinn_nn::init::{host_random, lazy_param};
use jinn_nn::ops::token_cross_entropy;
use jinn_nn::NnError;
use jinn_train::checkpoint::{latest_good, Checkpoint};
use jinn_train::precision::Precision;
use jinn_train::{Result, TrainError};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::path::Path;

/// Model kind stored in LAM checkpoints.
pub const LAM_KIND: &str = "lam";
/// Model kind stored in dynamics (Genie) checkpoints.
pub const DYNAMICS_KIND: &str = "dynamics";

/// Where the dynamics model's actions come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum ActionConfig {
    /// Latent actions of a LAM with this architecture.
    Lam {
        /// The LAM's architecture (from its checkpoint, or the run config when co-trained).
        lam: LamConfig,
        /// Trained by the dynamics loss (no LAM checkpoint given) rather than frozen.
        co_train: bool,
    },
    /// Ground-truth actions embedded by a learned table.
    Gt {
        /// Size of the dataset's action space.
        num_actions: usize,
        /// Embedding width `La`.
        action_dim: usize,
    },
}

/// Everything needed to rebuild a [`Genie`] (the `model` section stored in dynamics
/// checkpoints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenieConfig {
    /// The tokenizer's architecture (from its checkpoint).
    pub tokenizer: TokenizerConfig,
    /// The action source.
    pub actions: ActionConfig,
    /// The dynamics model.
    pub dynamics: DynamicsConfig,
}

impl GenieConfig {
    /// Whether the LAM trains along with the dynamics (no LAM checkpoint was given).
    pub fn lam_co_trained(&self) -> bool {
        matches!(self.actions, ActionConfig::Lam { co_train: true, .. })
    }

    /// Build the model with fresh parameters (frozen components are marked frozen; load
    /// their weights with [`assemble_genie`] or a whole checkpoint with [`load_genie`]).
    pub fn init(&self, device: &Device) -> std::result::Result<Genie, NnError> {
        let t = &self.tokenizer;
        let (lam, action_embed) = self.actions.init_source(t, self.dynamics.lam_code_embedding, device)?;
        let vq = t.vq()?;
        Ok(Genie {
            tokenizer: vq.init(device)?.no_grad(),
            lam,
            action_embed,
            dynamics: self.dynamics.init_on_grid(
                vq.num_codes,
                self.action_dim(),
                vq.coder.grid()?.cols(),
                device,
            )?,
        })
    }

    /// The action width `La` the dynamics model expects.
    pub fn action_dim(&self) -> usize {
        self.actions.action_dim()
    }
}

/// A fresh action source: a LAM encoder (frozen unless co-trained) or a ground-truth
/// embedding table.
pub(crate) type ActionModules = (Option<Lam>, Option<Param<Tensor<2>>>);

impl ActionConfig {
    /// The action width `La`.
    pub fn action_dim(&self) -> usize {
        match self {
            ActionConfig::Lam { lam, .. } => lam.coder.latent_dim,
            ActionConfig::Gt { action_dim, .. } => *action_dim,
        }
    }

    /// With ground-truth actions, `data` must record the same action count (when it records
    /// one at all).
    pub(crate) fn check_data(&self, data: &jinn_data::dataset::Dataset) -> Result<()> {
        if let ActionConfig::Gt { num_actions, .. } = self {
            if let Some(k) = data.metadata().and_then(|m| m.num_actions).filter(|k| k != num_actions) {
                return Err(TrainError::config(
                    "--actions gt",
                    format!("the model embeds {num_actions} actions but the data has {k}"),
                ));
            }
        }
        Ok(())
    }

    /// Fresh modules of this action source for the frames of tokenizer `t`: a LAM's encoder
    /// (frozen unless co-trained) and, with `lam_code_embedding`, a table `[K, L]` embedding
    /// its code indices; or a ground-truth embedding table `[num_actions, La]`. Tables are
    /// drawn from N(0, 1/La).
    pub(crate) fn init_source(
        &self,
        t: &TokenizerConfig,
        lam_code_embedding: bool,
        device: &Device,
    ) -> std::result::Result<ActionModules, NnError> {
        match self {
            ActionConfig::Lam { lam, co_train } => {
                check_lam_fits(lam, t)?;
                let model = lam.init_encoder(device)?;
                if !lam_code_embedding {
                    return Ok((Some(if *co_train { model } else { model.no_grad() }), None));
                }
                if *co_train {
                    return Err(NnError::InvalidConfig {
                        field: "model.lam_code_embedding",
                        reason: "needs a trained LAM (--lam RUN; set it to false to co-train one): a co-trained LAM would get no gradient \
                                 through its code indices"
                            .into(),
                    });
                }
                Ok((
                    Some(model.no_grad()),
                    Some(embedding_table(lam.num_codes, lam.coder.latent_dim, device)?),
                ))
            }
            ActionConfig::Gt { num_actions, action_dim } => {
                Ok((None, Some(embedding_table(*num_actions, *action_dim, device)?)))
            }
        }
    }
}

/// A learned action table `[k, la]` ~ N(0, 1/la).
fn embedding_table(k: usize, la: usize, device: &Device) -> std::result::Result<Param<Tensor<2>>, NnError> {
    if k == 0 || la == 0 {
        return Err(NnError::InvalidConfig {
            field: "num_actions/action_dim",
            reason: "must be positive".into(),
        });
    }
    let std = 1.0 / (la as f64).sqrt();
    Ok(lazy_param([k, la], device, move |d| host_random([k, la], Distribution::Normal(0.0, std), d)))
}

/// The LAM must see the tokenizer's frames.
fn check_lam_fits(lam: &LamConfig, t: &TokenizerConfig) -> std::result::Result<(), NnError> {
    let (l, t) = (lam.coder.frames(), t.coder().frames());
    if l != t {
        return Err(NnError::InvalidConfig {
            field: "lam.height/width/channels",
            reason: format!(
                "the LAM sees {}×{}×{} frames but the tokenizer {}×{}×{}",
                l.height, l.width, l.channels, t.height, t.width, t.channels
            ),
        });
    }
    Ok(())
}

/// The assembled world model (see the module docs).
#[derive(Module, Debug)]
pub struct Genie {
    /// The frozen tokenizer.
    pub tokenizer: Tokenizer,
    /// The LAM's encoder side (frozen, or co-trained), when actions are latent.
    pub lam: Option<Lam>,
    /// Ground-truth action embeddings `[num_actions, La]` (`--actions gt`), or embeddings of
    /// the LAM's code indices `[K, L]` (`dynamics.lam_code_embedding`).
    pub action_embed: Option<Param<Tensor<2>>>,
    /// The dynamics model.
    pub dynamics: Dynamics,
}

/// The result of [`Genie::forward`].
#[derive(Debug, Clone)]
pub struct GenieOutput {
    /// Tokenizer codes of the clip `[B, T, N]`.
    pub tokens: Tensor<3, Int>,
    /// Logits `[B, T, N, V]`.
    pub logits: Tensor<4>,
    /// Positions the loss counts `[B, T, N]` (row-major; MaskGIT: the masked ones).
    pub loss_positions: Vec<bool>,
    /// `ce + z_loss_weight·z_loss` `[1]`, a mean over the loss positions' weights.
    pub loss: Tensor<1>,
    /// `Σ w` over the loss positions (the masked tokens, changed ones weighted), what `loss`
    /// is a mean over.
    pub loss_weight: f64,
    /// Mean cross-entropy over the loss positions `[1]`.
    pub ce: Tensor<1>,
    /// Mean squared logsumexp over the loss positions `[1]`.
    pub z_loss: Tensor<1>,
    /// LAM code indices `[B·(T−1)]`, when actions are latent.
    pub lam_indices: Option<Tensor<1, Int>>,
}

impl Genie {
    /// Latent actions `[B, T−1, La]` for `videos` `[B, T, H, W, C]` in `[0, 1]` and, with
    /// ground-truth actions, `actions` `[B, T]` (action taken at each frame), plus the LAM's
    /// code indices. A frozen LAM's actions carry no gradient.
    pub fn latent_actions(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
    ) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError> {
        infer_actions(self.lam.as_ref(), self.action_embed.as_ref(), None, videos, actions)
    }

    /// Dynamics training/evaluation forward (Jasmine's `GenieMaskGIT.__call__`): tokenise `videos` (frozen), get
    /// the actions, draw the MaskGIT mask from `mask_streams` (one per clip; ignored by causal dynamics), and
    /// compute logits and the loss.
    pub fn forward(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        mask_streams: &SampleStreams,
    ) -> std::result::Result<GenieOutput, NnError> {
        self.forward_grounded(videos, actions, None, mask_streams)
    }

    /// [`Genie::forward`] with the LAM's codes grounded in the recorded `actions` by
    /// `grounding` (`model.ground_lam_codes`; see [`crate::code_partners`]).
    pub fn forward_grounded(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        grounding: Option<&CodeGrounding>,
        mask_streams: &SampleStreams,
    ) -> std::result::Result<GenieOutput, NnError> {
        self.forward_with(videos, actions, grounding, mask_streams, &mut |x| self.dynamics.backbone(x))
    }

    /// [`Genie::forward_grounded`] with the dynamics backbone run by `backbone` (see
    /// [`Dynamics::logits_with`]).
    pub fn forward_with(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        grounding: Option<&CodeGrounding>,
        mask_streams: &SampleStreams,
        backbone: &mut dyn FnMut(Tensor<4>) -> Tensor<4>,
    ) -> std::result::Result<GenieOutput, NnError> {
        let tokens = self.tokenizer.encode(videos.clone())?; // [b, t, n]
        let dims = tokens.dims();
        let device = tokens.device();
        // The dynamics compute in their parameters' dtype (bf16 under `compute_model`); the
        // loss is taken in f32.
        let (latent, lam_indices) =
            infer_actions(self.lam.as_ref(), self.action_embed.as_ref(), grounding, videos, actions)?; // [b, t−1, la]
        let latent = latent.cast(self.dynamics.token_embed.val().dtype()); // [b, t−1, la]
        let (logits, loss_positions, weight) = if self.dynamics.causal {
            let logits = self.dynamics.logits_with(tokens.clone(), latent, None, backbone)?;
            (logits, vec![true; dims.iter().product()], causal::all_positions(dims, &device))
        } else {
            let mask = maskgit::draw_mask(
                dims,
                self.dynamics.mask_limit,
                self.dynamics.mask_ratio_per_frame,
                mask_streams,
            )?;
            let mask_t = maskgit::mask_tensor(&mask, dims, &device);
            let previous = self.previous_frame_source(&tokens, &latent, &mask, &mask_t, mask_streams)?; // [b, t, n]
            let logits = self.dynamics.logits_reading(
                tokens.clone(),
                previous,
                latent,
                Some(mask_t.clone()),
                backbone,
            )?;
            (logits, mask, mask_t.float())
        };
        let logits = logits.cast(FloatDType::F32); // [b, t, n, v]
        let weight = changed_token_weights(weight, &tokens, self.dynamics.changed_token_weight);
        let loss_weight = weight.clone().sum().into_scalar::<f32>() as f64;
        let losses = token_cross_entropy(logits.clone(), tokens.clone(), weight, self.dynamics.z_loss_weight);
        let (loss, ce, z_loss) = (losses.loss, losses.ce, losses.z);
        Ok(GenieOutput { tokens, logits, loss_positions, loss, loss_weight, ce, z_loss, lam_indices })
    }

    /// The tokens `[B, T, N]` the MaskGIT previous-frame input reads in training: the true
    /// ones, or for the clips drawn by `previous_frame_own_share`, at the masked positions,
    /// the argmax of a first pass over the same masked clip (no gradient flows through it).
    fn previous_frame_source(
        &self,
        tokens: &Tensor<3, Int>,
        latent: &Tensor<3>,
        mask: &[bool],
        mask_t: &Tensor<3, Bool>,
        mask_streams: &SampleStreams,
    ) -> std::result::Result<Tensor<3, Int>, NnError> {
        let dims = tokens.dims();
        let own = maskgit::own_previous_clips(mask_streams, dims[0], self.dynamics.previous_frame_own_share)?;
        if !own.contains(&true) {
            return Ok(tokens.clone());
        }
        // Off the autodiff tape: the pass keeps no activations (a reversible backbone's memory
        // stays what it is) and pays no graph bookkeeping.
        let first = self.dynamics.valid().logits(
            tokens.clone().inner(),
            latent.clone().inner(),
            Some(mask_t.clone().inner()),
        )?; // [b, t, n, v]
        let predicted: Vec<i64> = first.argmax(3).try_into_vec_as::<i64>().expect("integer tensor data"); // [b, t, n]
        let truth: Vec<i64> = tokens.clone().try_into_vec_as::<i64>().expect("integer tensor data"); // [b, t, n]
        let read = maskgit::own_previous_tokens(&truth, &predicted, mask, &own);
        Ok(Tensor::from_data(TensorData::new(read, dims), &tokens.device()))
    }

    /// The model to run a training forward/backward on in `precision`: the dynamics and the
    /// action embeddings as in-graph casts of this model's f32 parameters
    /// ([`Precision::compute_model`]; their gradients land in f32 on this model), the frozen
    /// tokenizer and the LAM as they are, so tokens and latent codes do not depend on the
    /// precision.
    pub fn compute_model(&self, precision: Precision) -> Genie {
        Genie {
            tokenizer: self.tokenizer.clone(),
            lam: self.lam.clone(),
            action_embed: self.action_embed.as_ref().map(|p| precision.compute_model(p)),
            dynamics: precision.compute_model(&self.dynamics),
        }
    }

    /// The table action ids index `[K, La]`: the LAM's codebook (code `i` is the latent action
    /// the LAM emits as index `i`) or the recorded-action embeddings.
    pub fn action_table(&self) -> Tensor<2> {
        action_table(self.lam.as_ref(), self.action_embed.as_ref())
    }

    /// Frames `[B, T, H, W, C]` decoded from the most likely token at every position.
    pub fn decode_argmax(&self, logits: Tensor<4>) -> std::result::Result<Tensor<5>, NnError> {
        let [b, t, n, _] = logits.dims();
        self.tokenizer.decode(logits.argmax(3).reshape([b, t, n]))
    }

    /// Re-apply the freezing of the loaded components (after loading weights, which may
    /// reset gradient flags).
    pub fn refreeze(self, cfg: &GenieConfig) -> Self {
        let co_train = cfg.lam_co_trained();
        Genie {
            tokenizer: self.tokenizer.no_grad(),
            lam: self.lam.map(|l| if co_train { l } else { l.no_grad() }),
            ..self
        }
    }
}

/// Latent actions `[B, T−1, La]` for `videos` `[B, T, H, W, C]` from a LAM (its code vectors,
/// or their rows of `embed` when given, with the code indices; with `grounding` and recorded
/// `actions`, the codes grounded in them) or, from recorded `actions` `[B, T]`, an embedding
/// table (see [`Genie::latent_actions`]).
pub(crate) fn infer_actions(
    lam: Option<&Lam>,
    embed: Option<&Param<Tensor<2>>>,
    grounding: Option<&CodeGrounding>,
    videos: Tensor<5>,
    actions: Option<Tensor<2, Int>>,
) -> std::result::Result<(Tensor<3>, Option<Tensor<1, Int>>), NnError> {
    let [b, t, ..] = videos.dims();
    if let Some(lam) = lam {
        let (out, _, [b, tm1]) = lam.vq_encode(videos, None)?;
        let (latent, indices) = match (grounding, actions) {
            (Some(grounding), Some(actions)) => {
                let indices = ground_codes(grounding, out.indices, actions, [b, tm1 + 1])?; // [b·(t−1)]
                let table = embed.map(|e| e.val()).unwrap_or_else(|| lam.vq.codebook.val());
                (table.select(0, indices.clone()), indices) // [b·(t−1), la]
            }
            _ => {
                let latent = match embed {
                    Some(table) => table.val().select(0, out.indices.clone()), // [b·(t−1), la]
                    None => out.z_q,                                           // [b·(t−1), l]
                };
                (latent, out.indices)
            }
        };
        let la = latent.dims()[1];
        return Ok((latent.reshape([b, tm1, la]), Some(indices)));
    }
    let table = embed.expect("a world model has a LAM or action embeddings").val();
    let [k, la] = table.dims();
    let actions = actions.ok_or_else(|| NnError::InvalidConfig {
        field: "actions",
        reason: "this model embeds ground-truth actions but the batch carries none".into(),
    })?;
    if actions.dims() != [b, t] {
        return Err(NnError::Shape {
            what: "actions [B, T]",
            expected: format!("[{b}, {t}]"),
            got: format!("{:?}", actions.dims()),
        });
    }
    let host: Vec<i64> = actions.clone().try_into_vec_as::<i64>().expect("integer tensor data");
    if let Some(bad) = host.iter().find(|&&a| a < 0 || a as usize >= k) {
        return Err(NnError::Shape {
            what: "action id",
            expected: format!("in 0..{k}"),
            got: bad.to_string(),
        });
    }
    let taken = actions.slice([0..b, 0..t - 1]).reshape([b * (t - 1)]); // [b·(t−1)]
    Ok((table.select(0, taken).reshape([b, t - 1, la]), None))
}

/// The LAM's code `indices` `[B·(T−1)]` of clips `[b, t]` grounded in the recorded `actions`
/// `[B, T]` (the action at frame `i` causes transition `i → i + 1`).
fn ground_codes(
    grounding: &CodeGrounding,
    indices: Tensor<1, Int>,
    actions: Tensor<2, Int>,
    [b, t]: [usize; 2],
) -> std::result::Result<Tensor<1, Int>, NnError> {
    if actions.dims() != [b, t] {
        return Err(NnError::Shape {
            what: "actions [B, T]",
            expected: format!("[{b}, {t}]"),
            got: format!("{:?}", actions.dims()),
        });
    }
    let device = indices.device();
    let codes: Vec<i64> = indices.try_into_vec_as::<i64>().expect("integer tensor data");
    let recorded: Vec<i64> = actions.try_into_vec_as::<i64>().expect("integer tensor data");
    let grounded: Vec<i64> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let action = recorded[(i / (t - 1)) * t + i % (t - 1)];
            match usize::try_from(action) {
                Ok(a) => grounding.ground(c as usize, a) as i64,
                Err(_) => c,
            }
        })
        .collect();
    Ok(Tensor::from_data(TensorData::new(grounded, [codes.len()]), &device))
}

/// The table action ids index `[K, La]`: the LAM's code embeddings or codebook, or the
/// recorded-action embeddings.
pub(crate) fn action_table(lam: Option<&Lam>, embed: Option<&Param<Tensor<2>>>) -> Tensor<2> {
    match (lam, embed) {
        (_, Some(embed)) => embed.val(),
        (Some(lam), None) => lam.vq.codebook.val(),
        (None, None) => unreachable!("a world model has a LAM or action embeddings"),
    }
}

/// A component checkpoint: the newest one in `run_dir` that verifies, of `kind`, with its
/// stored `model` config parsed.
pub fn component_checkpoint<C: DeserializeOwned>(run_dir: &Path, kind: &str) -> Result<(Checkpoint, C)> {
    let found = latest_good(run_dir)?;
    let ckpt = found.checkpoint.ok_or_else(|| {
        let why = match found.skipped.first() {
            Some((dir, why)) => format!("; the newest, {}, is unreadable: {why}", dir.display()),
            None => String::new(),
        };
        TrainError::checkpoint(run_dir, format!("holds no usable `{kind}` checkpoint{why}"))
    })?;
    ckpt.state.ensure_compatible(&ckpt.dir, kind, None, |m| m.clone())?;
    let model = ckpt.state.config.get("model").cloned().unwrap_or(serde_json::Value::Null);
    let cfg: C = serde_json::from_value(model).map_err(|e| {
        TrainError::checkpoint(
            ckpt.dir.join(jinn_train::checkpoint::STATE_FILE),
            format!("its `model` config is not a {kind} config: {e}"),
        )
    })?;
    Ok((ckpt, cfg))
}

/// Load the VQ tokenizer of a tokenizer run (newest good checkpoint, stored config); an MAE
/// run is an error that says so.
pub fn load_tokenizer(run_dir: &Path, device: &Device) -> Result<(Tokenizer, TokenizerConfig)> {
    let (ckpt, cfg) = tokenizer_checkpoint(run_dir, TokenizerKind::Vq)?;
    let model = cfg.vq().and_then(|c| c.init(device));
    let model = model.map_err(|e| TrainError::checkpoint(&ckpt.dir, e.to_string()))?;
    Ok((ckpt.load_model(model)?, cfg))
}

/// Load the MAE tokenizer of a tokenizer run trained with `--kind mae`; a VQ run is an error
/// that says so.
pub fn load_mae_tokenizer(run_dir: &Path, device: &Device) -> Result<(MaeTokenizer, TokenizerConfig)> {
    let (ckpt, cfg) = tokenizer_checkpoint(run_dir, TokenizerKind::Mae)?;
    let model = cfg.mae().and_then(|c| c.init(device));
    let model = model.map_err(|e| TrainError::checkpoint(&ckpt.dir, e.to_string()))?;
    Ok((ckpt.load_model(model)?, cfg))
}

/// A tokenizer run's newest good checkpoint, which must hold a tokenizer of `kind`.
fn tokenizer_checkpoint(run_dir: &Path, kind: TokenizerKind) -> Result<(Checkpoint, TokenizerConfig)> {
    let (ckpt, cfg) = component_checkpoint::<TokenizerConfig>(run_dir, TOKENIZER_KIND)?;
    if cfg.kind() != kind {
        let needs = match kind {
            TokenizerKind::Vq => {
                "MaskGIT and causal dynamics need a VQ tokenizer (jinn train tokenizer --kind vq)"
            }
            TokenizerKind::Mae => {
                "diffusion dynamics need an MAE tokenizer (jinn train tokenizer --kind mae)"
            }
        };
        return Err(TrainError::checkpoint(
            &ckpt.dir,
            format!("holds a `{}` tokenizer (model.kind); {needs}", cfg.kind()),
        ));
    }
    Ok((ckpt, cfg))
}

/// Load the LAM of a LAM run (newest good checkpoint, stored config), decoder dropped.
pub fn load_lam(run_dir: &Path, device: &Device) -> Result<(Lam, LamConfig)> {
    let (ckpt, cfg) = component_checkpoint::<LamConfig>(run_dir, LAM_KIND)?;
    let model = cfg.init(device).map_err(|e| TrainError::checkpoint(&ckpt.dir, e.to_string()))?;
    Ok((ckpt.load_model(model)?.without_decoder(), cfg))
}

/// Where a new Genie's actions come from.
#[derive(Debug, Clone)]
pub enum ActionSource<'a> {
    /// A trained LAM run (frozen).
    LamRun(&'a Path),
    /// A LAM of this architecture, co-trained from scratch.
    CoTrain(LamConfig),
    /// Ground-truth actions from a space of this size.
    GroundTruth {
        /// Size of the action space.
        num_actions: usize,
    },
}

/// Assemble a new Genie for training: the tokenizer (and LAM) from their runs, fresh
/// dynamics (and co-trained LAM or action table) drawn from `device`'s generator.
pub fn assemble_genie(
    tokenizer_run: &Path,
    actions: ActionSource<'_>,
    dynamics: &DynamicsConfig,
    device: &Device,
) -> Result<(Genie, GenieConfig)> {
    check_token_dynamics(dynamics, tokenizer_run)?;
    let (tokenizer, tokenizer_cfg) = load_tokenizer(tokenizer_run, device)?;
    let (lam, actions) = resolve_actions(actions, &tokenizer_cfg, dynamics.action_dim, device)?;
    let cfg = GenieConfig { tokenizer: tokenizer_cfg, actions, dynamics: dynamics.clone() };
    let fresh = cfg.init(device).map_err(|e| TrainError::config("model", e.to_string()))?;
    let genie = Genie { tokenizer, lam: lam.or(fresh.lam), ..fresh }.refreeze(&cfg);
    Ok((genie, cfg))
}

/// MaskGIT and causal dynamics only: diffusion dynamics are assembled by
/// [`crate::diffusion::genie::assemble_diffusion_genie`].
fn check_token_dynamics(dynamics: &DynamicsConfig, run: &Path) -> Result<()> {
    if dynamics.tokens().is_none() {
        return Err(TrainError::checkpoint(
            run,
            format!(
                "holds {} dynamics; this path takes MaskGIT or causal dynamics only (other kinds: \
                 load_world, jinn sample, jinn eval world)",
                dynamics.kind()
            ),
        ));
    }
    Ok(())
}

/// The action source's resolved config, with the trained LAM loaded from its run (frozen
/// parts are refrozen by the caller) when one is given.
pub(crate) fn resolve_actions(
    actions: ActionSource<'_>,
    tokenizer_cfg: &TokenizerConfig,
    action_dim: usize,
    device: &Device,
) -> Result<(Option<Lam>, ActionConfig)> {
    Ok(match actions {
        ActionSource::LamRun(dir) => {
            let (lam, cfg) = load_lam(dir, device)?;
            check_lam_fits(&cfg, tokenizer_cfg).map_err(|e| TrainError::checkpoint(dir, e.to_string()))?;
            (Some(lam), ActionConfig::Lam { lam: cfg, co_train: false })
        }
        ActionSource::CoTrain(cfg) => (None, ActionConfig::Lam { lam: cfg, co_train: true }),
        ActionSource::GroundTruth { num_actions } => (None, ActionConfig::Gt { num_actions, action_dim }),
    })
}

/// Load a whole Genie from a dynamics run (newest good checkpoint, stored [`GenieConfig`]).
pub fn load_genie(run_dir: &Path, device: &Device) -> Result<(Genie, GenieConfig, u64)> {
    let (ckpt, cfg) = component_checkpoint::<GenieConfig>(run_dir, DYNAMICS_KIND)?;
    check_token_dynamics(&cfg.dynamics, &ckpt.dir)?;
    let model = cfg.init(device).map_err(|e| TrainError::checkpoint(&ckpt.dir, e.to_string()))?;
    let genie = ckpt.load_model(model)?.refreeze(&cfg);
    Ok((genie, cfg, ckpt.state.step))
}

pub mod reversible;
mod world;

#[cfg(test)]
pub(crate) mod tests;
