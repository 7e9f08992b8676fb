//! jinn's Genie-style world model on Burn 0.22, one folder per model family, each with its
//! model, config and training task side by side: the VQ-VAE video tokenizer ([`tokenizer`]),
//! the MAE tokenizer ([`mae`]), the latent action model ([`lam`]), MaskGIT and causal dynamics
//! ([`dynamics`]) and their assembly into a world model ([`genie`]), diffusion dynamics and
//! its world model ([`diffusion`]); the registry of dynamics kinds ([`dynamics_kinds`]); the
//! data config and batches every task shares ([`data`]).
#![warn(missing_docs)]

pub mod code_partners;
pub mod data;
pub mod diffusion;
pub mod dynamics;
pub mod dynamics_kinds;
pub mod genie;
#[cfg(test)]
mod grad_check;
pub mod lam;
pub mod mae;
pub mod nmi;
#[cfg(test)]
mod precision_check;
pub mod sample;
pub mod step_macs;
mod streams;
pub mod tokenizer;
mod vq_metrics;
pub mod window;
pub mod world_eval;
pub mod world_model;

pub use data::to_u8 as frames_to_u8;
pub use data::DataConfig;
pub use diffusion::genie::{assemble_diffusion_genie, load_diffusion_genie, DiffusionGenie};
pub use diffusion::sample::sample_diffusion;
pub use diffusion::task::DiffusionTask;
pub use diffusion::{DiffusionConfig, DiffusionDynamics};
pub use dynamics::task::{DynamicsRunConfig, DynamicsTask, GenieRunConfig};
pub use dynamics::{Dynamics, DynamicsConfig, MaskGitConfig, TokenDynamicsConfig, TokenMetrics};
pub use dynamics_kinds::{DynamicsKind, DynamicsKindEntry, KindConfig, DYNAMICS_KINDS};
pub use genie::{
    assemble_genie, load_genie, load_lam, load_mae_tokenizer, load_tokenizer, ActionConfig, ActionSource,
    Genie, GenieConfig, GenieOutput, DYNAMICS_KIND, LAM_KIND,
};
pub use lam::task::{LamRunConfig, LamTask};
pub use lam::{CodeAssignment, Lam, LamConfig, LamOutput};
pub use mae::task::MaeTask;
pub use mae::{MaeConfig, MaeOutput, MaeTokenizer};
pub use sample::{sample, Rollout, SamplerConfig};
pub use tokenizer::task::{TokenizerRunConfig, TokenizerTask};
pub use tokenizer::{
    frames_to_unit, CoderConfig, Tokenizer, TokenizerConfig, TokenizerKind, TokenizerOutput, VqConfig,
    TOKENIZER_KIND,
};
pub use window::{trained_clip_frames, windowed};
pub use world_eval::{WorldEval, WorldEvalConfig, WorldMetrics};
pub use world_model::{load_world, Encoded, World, WorldModel};
