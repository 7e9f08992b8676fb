//! Running a registered task ([`crate::tasks`]): load its run config, build it,
//! train it with progress on stderr, print the summary.

use super::progress::TrainProgress;
use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use crate::device::DeviceSpec;
use crate::tasks::{self, RunConfig, TaskInputs};
use jinn_train::distributed::threads::{run_ranks, RankError};
use std::sync::Mutex;
use std::time::Instant;

/// Train `task` as `jinn train TASK` with flags `a`; `inputs` adds what the task needs besides
/// its data and device (a world model's tokenizer run and actions). With `train.local_ranks`
/// above 1 every rank is a thread with its share of the cores ([`jinn_train::distributed::threads`]).
pub fn train<'a>(
    task: &str,
    a: &'a RunArgs,
    inputs: impl Fn(TaskInputs<'a>) -> anyhow::Result<TaskInputs<'a>> + Sync,
) -> anyhow::Result<()> {
    let mut cfg = tasks::load_config(task, a.config.as_deref(), &a.overrides)?;
    check_fresh_out(&a.out, a.resume)?;
    cfg.train().validate()?;
    let ranks = cfg.train().local_ranks;
    if ranks > 1 && a.device.spec != DeviceSpec::Cpu {
        // The ranks split the CPU's cores; one rank drives a GPU. Same batch, same model.
        tracing::info!("train.local_ranks = {ranks} is for the CPU: one rank trains on {}", a.device);
        cfg.train_mut().local_ranks = 1;
    }
    if cfg.train().local_ranks <= 1 {
        return train_rank(task, a, cfg.as_ref(), &inputs);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).div_ceil(ranks);
    // One rank builds its task at a time: a task may prepare files in the run directory (the
    // language model's token shards) that the next one then finds.
    let building = Mutex::new(());
    let trained = run_ranks(ranks, threads, |_rank| {
        let mut built = {
            let _turn = building.lock().unwrap_or_else(|e| e.into_inner());
            build(task, a, cfg.as_ref(), &inputs)?
        };
        run(task, a, cfg.as_ref(), &mut built)
    });
    match trained {
        Ok(_) => Ok(()),
        Err(RankError::Task(_, e)) => Err(e),
        Err(other) => Err(anyhow::anyhow!("{other}")),
    }
}

/// Build and train `task` on this thread, as the only rank or as one of a group.
fn train_rank<'a>(
    task: &str,
    a: &'a RunArgs,
    cfg: &dyn RunConfig,
    inputs: &impl Fn(TaskInputs<'a>) -> anyhow::Result<TaskInputs<'a>>,
) -> anyhow::Result<()> {
    let mut built = build(task, a, cfg, inputs)?;
    run(task, a, cfg, &mut built)
}

/// The task of `cfg` on `a`'s data and device.
fn build<'a>(
    task: &str,
    a: &'a RunArgs,
    cfg: &dyn RunConfig,
    inputs: &impl Fn(TaskInputs<'a>) -> anyhow::Result<TaskInputs<'a>>,
) -> anyhow::Result<tasks::Built> {
    let inputs =
        inputs(TaskInputs { out: Some(&a.out), ..TaskInputs::new(&a.data, a.device.device().autodiff()) })?;
    tasks::build(task, cfg, &inputs)
}

/// Train `built` with progress on stderr and print the summary (rank 0 alone speaks).
fn run(task: &str, a: &RunArgs, cfg: &dyn RunConfig, built: &mut tasks::Built) -> anyhow::Result<()> {
    let train = cfg.train();
    if jinn_train::distributed::is_leader() {
        tracing::info!(
            "training the {} {task} for {} steps on {} ({:?}) into {}",
            cfg.kind(),
            train.steps,
            a.device,
            train.precision,
            a.out.display()
        );
    }
    let opts = a.run_options(&built.stored);
    let t = Instant::now();
    let summary = built.task.train(train, &opts, &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &a.out)
}
