//! jinn's Genie-style world model on Burn 0.22: the VQ-VAE video tokenizer ([`tokenizer`]),
//! the latent action model ([`lam`]), MaskGIT and causal dynamics ([`dynamics`]), their
//! assembly into a world model ([`genie`]) and their training tasks.
#![warn(missing_docs)]

pub mod diffusion;
pub mod diffusion_genie;
pub mod diffusion_sample;
pub mod diffusion_task;
pub mod dynamics;
pub mod dynamics_task;
pub mod genie;
#[cfg(test)]
mod grad_check;
pub mod lam;
pub mod lam_task;
pub mod mae;
pub mod mae_task;
pub mod nmi;
pub mod sample;
pub mod step_macs;
mod streams;
mod task_common;
pub mod tokenizer;
pub mod tokenizer_eval;
pub mod tokenizer_task;
pub mod world_eval;
pub mod world_model;

pub use diffusion::DiffusionDynamics;
pub use diffusion_genie::{assemble_diffusion_genie, load_diffusion_genie, DiffusionGenie};
pub use diffusion_sample::sample_diffusion;
pub use diffusion_task::DiffusionTask;
pub use dynamics::{Dynamics, DynamicsConfig, DynamicsKind, TokenMetrics};
pub use dynamics_task::{DynamicsRunConfig, DynamicsTask, GenieRunConfig};
pub use genie::{
    assemble_genie, load_genie, load_lam, load_mae_tokenizer, load_tokenizer, ActionConfig, ActionSource,
    Genie, GenieConfig, GenieOutput, DYNAMICS_KIND, LAM_KIND,
};
pub use lam::{CodeAssignment, Lam, LamConfig, LamOutput};
pub use lam_task::{LamRunConfig, LamTask};
pub use mae::{MaeOutput, MaeTokenizer};
pub use mae_task::MaeTask;
pub use sample::{sample, Rollout, SamplerConfig};
pub use task_common::to_u8 as frames_to_u8;
pub use tokenizer::{frames_to_unit, Tokenizer, TokenizerConfig, TokenizerKind, TokenizerOutput};
pub use tokenizer_task::{DataConfig, TokenizerRunConfig, TokenizerTask, TOKENIZER_KIND};
pub use world_eval::{WorldEval, WorldEvalConfig, WorldMetrics};
pub use world_model::{load_world, Encoded, World, WorldModel};
