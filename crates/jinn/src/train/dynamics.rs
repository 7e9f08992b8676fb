//! `jinn train dynamics`: MaskGIT or causal dynamics on a trained VQ tokenizer, or diffusion
//! dynamics (`--kind diffusion`) on a trained MAE tokenizer, with a trained LAM (`--lam`), a
//! co-trained LAM (neither flag) or ground-truth actions (`--actions gt`).

use super::run_args::RunArgs;
use crate::tasks::{Actions, TaskInputs};
use anyhow::bail;
use jinn_data::metadata::DatasetMetadata;
use jinn_world::DynamicsKind;
use std::path::{Path, PathBuf};

/// Arguments of `jinn train dynamics`.
#[derive(clap::Args)]
pub struct DynamicsArgs {
    /// Config, data, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
    /// Tokenizer run directory (its newest good checkpoint and stored config are used).
    #[arg(long)]
    pub tokenizer: PathBuf,
    /// LAM run directory (frozen). Without it and without `--actions gt`, a LAM is co-trained.
    #[arg(long, conflicts_with = "actions")]
    pub lam: Option<PathBuf>,
    /// `gt`: embed the dataset's recorded actions instead of using a LAM.
    #[arg(long, value_parser = ["gt"])]
    pub actions: Option<String>,
    /// `maskgit`, `causal` or `diffusion` (overrides `model.kind`; diffusion needs an MAE
    /// `--tokenizer`).
    #[arg(long)]
    pub kind: Option<DynamicsKind>,
}

/// Assemble the world model, train, then print the step count, the time per step and the
/// last metrics.
pub fn run(mut a: DynamicsArgs) -> anyhow::Result<()> {
    if let Some(kind) = a.kind {
        a.run.overrides.push(format!("model.kind={kind}"));
    }
    let a = &a;
    super::registered::train("dynamics", &a.run, |inputs| {
        let actions = match (&a.lam, a.actions.as_deref()) {
            (Some(dir), _) => Actions::LamRun(dir),
            (None, Some("gt")) => Actions::GroundTruth(recorded_actions(&a.run.data)?),
            _ => Actions::CoTrain,
        };
        Ok(TaskInputs { tokenizer: Some(&a.tokenizer), actions, ..inputs })
    })
}

/// The size of the action space `data`'s train split records (`--actions gt`).
fn recorded_actions(data: &Path) -> anyhow::Result<usize> {
    let meta = match DatasetMetadata::find(&data.join("train")) {
        Some(path) => Some(DatasetMetadata::load(&path)?),
        None => None,
    };
    let Some(num_actions) = meta.and_then(|m| m.num_actions) else {
        bail!(
            "--actions gt: {} has no num_actions in its metadata.json (no recorded actions)",
            data.display()
        );
    };
    Ok(num_actions)
}
