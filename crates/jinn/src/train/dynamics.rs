//! `jinn train dynamics`: MaskGIT or causal dynamics on a trained tokenizer, with a trained
//! LAM (`--lam`), a co-trained LAM (neither flag) or ground-truth actions (`--actions gt`).

use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use anyhow::{bail, Context};
use jinn_data::dataset::Dataset;
use jinn_data::rng::derive_seed;
use jinn_train::train_loop::run as run_loop;
use jinn_world::{
    assemble_genie, ActionSource, DynamicsKind, DynamicsRunConfig, DynamicsTask, GenieRunConfig,
};
use std::path::PathBuf;
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
    /// `maskgit` or `causal` (overrides `model.kind`).
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
            let ds = Dataset::open(&train, cfg.data.seq_len, None)?;
            let Some(num_actions) = ds.metadata().and_then(|m| m.num_actions) else {
                bail!(
                    "--actions gt: {} has no num_actions in its metadata.json (no recorded actions)",
                    train.display()
                );
            };
            ActionSource::GroundTruth { num_actions }
        }
        _ => ActionSource::CoTrain(cfg.lam.clone()),
    };
    let device = r.device.device().autodiff();
    let mut genie_cfg = None;
    let genie = jinn_nn::init::seeded_init(&device, derive_seed(cfg.train.seed, "init", 0), || {
        let (genie, assembled) = assemble_genie(&a.tokenizer, source, &cfg.model, &device)?;
        genie_cfg = Some(assembled);
        Ok::<_, jinn_train::TrainError>(genie)
    })
    .with_context(|| format!("assembling the world model from tokenizer run {}", a.tokenizer.display()))?;
    let genie_cfg = genie_cfg.expect("set by a successful assembly");
    let run_cfg = GenieRunConfig { model: genie_cfg, train: cfg.train.clone(), data: cfg.data.clone() };
    let mut task = DynamicsTask::new(&run_cfg, &r.data, genie)
        .with_context(|| format!("setting up dynamics training on {}", r.data.display()))?;
    tracing::info!(
        "training {:?} dynamics for {} steps on {} into {}",
        cfg.model.kind,
        cfg.train.steps,
        r.device,
        r.out.display()
    );
    let t = Instant::now();
    let summary = run_loop(&mut task, &run_cfg.train, &r.run_options(&run_cfg))?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &r.out)
}
