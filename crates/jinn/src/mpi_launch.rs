//! `mpirun -np N jinn …` (cargo feature `mpi`): a `jinn` process started by an MPI launcher
//! joins the job, installs it as the training process group ([`jinn_train::distributed`]) and,
//! when the command fails, ends the whole job with the error instead of leaving the other
//! ranks waiting for it (likewise when it panics).

use anyhow::Context;
use jinn_train::distributed::mpi::{MpiCollective, MpiSession};
use jinn_train::distributed::Collective;
use std::sync::Arc;
use std::time::Duration;

/// Environment variable: seconds one all-reduce may wait for the other ranks (default
/// [`DEFAULT_TIMEOUT_SECS`]).
pub const TIMEOUT_ENV: &str = "JINN_MPI_TIMEOUT_SECS";

/// Default of [`TIMEOUT_ENV`]: long enough for rank 0's validation and checkpoints.
pub const DEFAULT_TIMEOUT_SECS: f64 = 600.0;

/// Variables that MPI launchers (OpenMPI's mpirun, PMIx, MPICH's Hydra, Slurm's PMI) set in
/// the processes they start.
const LAUNCHER_VARS: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"];

/// This process's part of an MPI job; finish it with [`MpiJob::finish`].
pub struct MpiJob {
    session: MpiSession,
    group: Arc<MpiCollective>,
}

/// Join the MPI job if an MPI launcher started this process (otherwise `None`: a plain run).
pub fn join_if_launched() -> anyhow::Result<Option<MpiJob>> {
    if !LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return Ok(None);
    }
    let (session, group) = MpiCollective::init(timeout_from_env()?)?;
    if group.size() > 1 {
        jinn_train::distributed::install(group.clone())?;
        // A panicking rank would otherwise wait in MPI_Finalize while the others wait for it
        // until the timeout: end the job at once (after the usual panic message).
        let default_hook = std::panic::take_hook();
        let on_panic = group.clone();
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            on_panic.abort("panicked (message above); aborting the job", 1);
        }));
    }
    Ok(Some(MpiJob { session, group }))
}

/// [`TIMEOUT_ENV`] as a duration.
fn timeout_from_env() -> anyhow::Result<Duration> {
    let secs = match std::env::var(TIMEOUT_ENV) {
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .with_context(|| format!("{TIMEOUT_ENV}={v}: expected a positive number of seconds"))?,
        Err(_) => DEFAULT_TIMEOUT_SECS,
    };
    Ok(Duration::from_secs_f64(secs))
}

impl MpiJob {
    /// End of the command: after an error in a multi-rank job, print it and abort every rank
    /// (exit code 1); otherwise finalise MPI.
    pub fn finish(self, result: &anyhow::Result<()>) {
        if let (Err(e), true) = (result, self.group.size() > 1) {
            self.group.abort(&format!("error: {e:#}"), 1);
        }
        drop(self.session);
    }
}
