//! The MPI process group (cargo feature `mpi`): OpenMPI (or any MPI) through the `mpi` crate.
//!
//! **Dead or hung ranks.** A blocking all-reduce waits forever for a rank that hangs. Each
//! all-reduce here is non-blocking (`MPI_Iallreduce`) and polled against a deadline
//! ([`MpiCollective::timeout`], counted from when this rank enters the call); when it passes,
//! the rank prints which operation and rank timed out and calls `MPI_Abort`, which ends every
//! rank of the job. A rank that dies outright is noticed by `mpirun`, which ends the job
//! itself. Either way nothing is written after the last complete checkpoint (checkpoints are
//! written atomically by rank 0), so `--resume` continues from it.
//!
//! MPI is initialised with `MPI_THREAD_FUNNELED`: only the thread that called
//! [`MpiCollective::init`] (the training loop's) may call the collective operations.

use super::Collective;
use crate::error::{Result, TrainError};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use mpi::Threading;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keeps MPI initialised; dropping it finalises MPI (drop it last, after training ended).
pub struct MpiSession {
    _universe: Universe,
}

impl std::fmt::Debug for MpiSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MpiSession")
    }
}

/// `MPI_COMM_WORLD` as a [`Collective`] whose operations give up after a timeout.
#[derive(Debug, Clone)]
pub struct MpiCollective {
    rank: usize,
    size: usize,
    /// How long one all-reduce may wait for the other ranks before the job is aborted. It must
    /// cover rank 0's validation, images and checkpoint snapshots, which the others wait for
    /// at their next all-reduce.
    pub timeout: Duration,
}

/// Exit code passed to `MPI_Abort` when a rank stops answering.
pub const TIMEOUT_EXIT_CODE: i32 = 3;

impl MpiCollective {
    /// Initialise MPI (once per process) and describe `MPI_COMM_WORLD`.
    pub fn init(timeout: Duration) -> Result<(MpiSession, Arc<MpiCollective>)> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| TrainError::distributed("MPI is already initialised in this process"))?;
        if threading < Threading::Funneled {
            return Err(TrainError::distributed(format!(
                "the MPI library offers thread level {threading:?}; jinn needs at least Funneled"
            )));
        }
        let world = universe.world();
        let group = MpiCollective { rank: world.rank() as usize, size: world.size() as usize, timeout };
        Ok((MpiSession { _universe: universe }, Arc::new(group)))
    }

    /// Print `message` prefixed with this rank and end every rank of the job with `code`.
    pub fn abort(&self, message: &str, code: i32) -> ! {
        eprintln!("jinn rank {}/{}: {message}", self.rank, self.size);
        SimpleCommunicator::world().abort(code)
    }

    /// Sum `buf` over all ranks with `MPI_Iallreduce`, polling until done or the deadline.
    fn all_reduce_sum<T: Equivalence + Copy>(&self, buf: &mut [T]) -> Result<()> {
        let send = buf.to_vec();
        let world = SimpleCommunicator::world();
        let started = Instant::now();
        mpi::request::scope(|scope| {
            let mut request = world.immediate_all_reduce_into(scope, &send[..], buf, SystemOperation::sum());
            loop {
                request = match request.test() {
                    Ok(_) => return,
                    Err(pending) => pending,
                };
                let waited = started.elapsed();
                if waited >= self.timeout {
                    // A pending request cannot be abandoned (its buffers belong to MPI):
                    // end the job here.
                    self.abort(
                        &format!(
                            "an all-reduce of {} values got no answer from every rank within {:.0} s \
                             (a rank died, hangs, or is far slower); aborting the job. The last \
                             checkpoint in the run directory is intact: resume with --resume \
                             (set JINN_MPI_TIMEOUT_SECS to wait longer)",
                            send.len(),
                            self.timeout.as_secs_f64()
                        ),
                        TIMEOUT_EXIT_CODE,
                    );
                }
                // Spin briefly (latency), then sleep so a waiting rank leaves the CPU to others.
                if waited < Duration::from_millis(2) {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        Ok(())
    }
}

impl Collective for MpiCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_reduce_sum_f32(&self, buf: &mut [f32]) -> Result<()> {
        self.all_reduce_sum(buf)
    }

    fn all_reduce_sum_f64(&self, buf: &mut [f64]) -> Result<()> {
        self.all_reduce_sum(buf)
    }
}
