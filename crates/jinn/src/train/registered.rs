//! Running a registered task ([`crate::tasks`]): load its run config, build it,
//! train it with progress on stderr, print the summary.

use super::progress::TrainProgress;
use super::report::{check_fresh_out, print_summary};
use super::run_args::RunArgs;
use crate::tasks::{self, TaskInputs};
use std::time::Instant;

/// Train `task` as `jinn train TASK` with flags `a`; `inputs` adds what the task needs besides
/// its data and device (a world model's tokenizer run and actions).
pub fn train<'a>(
    task: &str,
    a: &'a RunArgs,
    inputs: impl FnOnce(TaskInputs<'a>) -> anyhow::Result<TaskInputs<'a>>,
) -> anyhow::Result<()> {
    let cfg = tasks::load_config(task, a.config.as_deref(), &a.overrides)?;
    check_fresh_out(&a.out, a.resume)?;
    let inputs =
        inputs(TaskInputs { out: Some(&a.out), ..TaskInputs::new(&a.data, a.device.device().autodiff()) })?;
    let mut built = tasks::build(task, cfg.as_ref(), &inputs)?;
    let train = cfg.train();
    tracing::info!(
        "training the {} {task} for {} steps on {} ({:?}) into {}",
        cfg.kind(),
        train.steps,
        a.device,
        train.precision,
        a.out.display()
    );
    let opts = a.run_options(&built.stored);
    let t = Instant::now();
    let summary = built.task.train(train, &opts, &mut TrainProgress::new())?;
    print_summary(&summary, t.elapsed().as_secs_f64(), &a.out)
}
