//! `jinn train dynamics`: MaskGIT or causal dynamics on a trained VQ tokenizer, or diffusion
//! dynamics (`--kind diffusion`) on a trained MAE tokenizer, with a trained LAM (`--lam`), a
//! co-trained LAM (neither flag) or ground-truth actions (`--actions gt`).

use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use crate::train::progress::TrainProgress;
use anyhow::{bail, Context};
use burn::tensor::Device;
use jinn_data::metadata::DatasetMetadata;
use jinn_data::rng::derive_seed;
use jinn_train::train_loop::{run_observed, TrainTask};
use jinn_world::{
    assemble_diffusion_genie, assemble_genie, ActionSource, DiffusionTask, DynamicsKind, DynamicsRunConfig,
    DynamicsTask, GenieRunConfig,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

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

/// Assemble the Genie, train, then print the step count, the time per step and the last metrics.
pub fn run(a: DynamicsArgs) -> anyhow::Result<()> {
    let r = &a.run;
    let mut cfg: DynamicsRunConfig = r.load_config()?;
    if let Some(kind) = a.kind {
        cfg.model.kind = kind;
    }
    check_fresh_out(&r.out, r.resume)?;
    let source = match (&a.lam, a.actions.as_deref()) {
        (Some(dir), _) => ActionSource::LamRun(dir),
        (None, Some("gt")) => {
            let train = r.data.join("train");
            let meta = match DatasetMetadata::find(&train) {
                Some(path) => Some(DatasetMetadata::load(&path)?),
                None => None,
            };
            let Some(num_actions) = meta.and_then(|m| m.num_actions) else {
                bail!(
                    "--actions gt: {} has no num_actions in its metadata.json (no recorded actions)",
                    r.data.display()
                );
            };
            ActionSource::GroundTruth { num_actions }
        }
        _ => ActionSource::CoTrain(cfg.lam.clone()),
    };
    let device = r.device.device().autodiff();
    if cfg.model.kind == DynamicsKind::Diffusion {
        let seed = derive_seed(cfg.train.seed, "init", 0);
        let assembling =
            || format!("assembling the world model from tokenizer run {}", a.tokenizer.display());
        let setup = || format!("setting up dynamics training on {}", r.data.display());
        let mut genie_cfg = None;
        let genie = jinn_nn::init::seeded_init(&device, seed, || {
            let (genie, assembled) = assemble_diffusion_genie(&a.tokenizer, source, &cfg.model, &device)?;
            genie_cfg = Some(assembled);
            Ok::<_, jinn_train::TrainError>(genie)
        })
        .with_context(assembling)?;
        let genie_cfg = genie_cfg.expect("set by a successful assembly");
        let run_cfg = GenieRunConfig { model: genie_cfg, train: cfg.train.clone(), data: cfg.data.clone() };
        let task = DiffusionTask::new(&run_cfg, &r.data, genie).with_context(setup)?;
        return train(task, &run_cfg, r);
    }
    let (task, run_cfg) = token_dynamics_task(&cfg, &a.tokenizer, source, &r.data, &device)?;
    train(task, &run_cfg, r)
}

/// The MaskGIT or causal dynamics task of `jinn train dynamics`: a Genie assembled from the
/// `tokenizer` run and the action `source` (fresh parts drawn from `cfg.train.seed`), set up to
/// train on `data`'s splits. Also returns the resolved config its checkpoints store.
pub(crate) fn token_dynamics_task(
    cfg: &DynamicsRunConfig,
    tokenizer: &Path,
    source: ActionSource<'_>,
    data: &Path,
    device: &Device,
) -> anyhow::Result<(DynamicsTask, GenieRunConfig)> {
    let seed = derive_seed(cfg.train.seed, "init", 0);
    let mut genie_cfg = None;
    let genie = jinn_nn::init::seeded_init(device, seed, || {
        let (genie, assembled) = assemble_genie(tokenizer, source, &cfg.model, device)?;
        genie_cfg = Some(assembled);
        Ok::<_, jinn_train::TrainError>(genie)
    })
    .with_context(|| format!("assembling the world model from tokenizer run {}", tokenizer.display()))?;
    let genie_cfg = genie_cfg.expect("set by a successful assembly");
    let run_cfg = GenieRunConfig { model: genie_cfg, train: cfg.train.clone(), data: cfg.data.clone() };
    let task = DynamicsTask::new(&run_cfg, data, genie)
        .with_context(|| format!("setting up dynamics training on {}", data.display()))?;
    Ok((task, run_cfg))
}

/// Run the loop on `task`, then print the summary.
fn train<T: TrainTask>(mut task: T, run_cfg: &GenieRunConfig, r: &RunArgs) -> anyhow::Result<()> {
    tracing::info!(
        "training {:?} dynamics for {} steps on {} into {}",
        run_cfg.model.dynamics.kind,
        run_cfg.train.steps,
        r.device,
        r.out.display()
    );
    let t = Instant::now();
    let summary =
        run_observed(&mut task, &run_cfg.train, &r.run_options(run_cfg), &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &r.out)
}
