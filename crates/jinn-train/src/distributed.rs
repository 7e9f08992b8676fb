//! Data parallelism across processes (ranks): every rank holds the whole model, trains on its
//! own shard of each global batch, and the ranks average their gradients before the
//! identical optimiser update.
//!
//! The transport is a [`Collective`] — in practice MPI ([`mpi`], cargo feature `mpi`) —
//! installed once per process with [`install`] before the training tasks are built. Nothing
//! is installed in a plain run: [`rank`] is 0, [`world_size`] is 1 and every function here is a
//! no-op, so single-process training is untouched. The process group is process-wide state by
//! nature (MPI is initialised once per process), hence one global rather than a handle passed
//! through every task constructor.
//!
//! What each part of a run does with it:
//! - **loaders** shard each global batch by [`rank`] / [`world_size`] (the jinn-data loader's
//!   rank slice of `batch × world` samples), so the data order of `N` ranks × batch `B` equals
//!   one rank × batch `N·B`;
//! - **tasks** call [`crate::train_loop::StepContext::finish_gradients`] between backward and
//!   the optimiser step, which averages the gradients over ranks ([`average_gradients`],
//!   flattened into buckets of [`BUCKET_BYTES`]) and then clips;
//! - **the loop** ([`crate::train_loop::run`]) checks the ranks resumed from the same step,
//!   averages logged metrics over ranks, and lets rank 0 alone validate, write images, metrics
//!   and checkpoints. Checkpoints hold no rank count, so a run may resume on any number of
//!   ranks.

pub mod gradients;
#[cfg(feature = "mpi")]
pub mod mpi;

pub use gradients::{average_gradients, BUCKET_BYTES};

use crate::error::{Result, TrainError};
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

/// A group of ranks that can sum buffers element-wise (an all-reduce). Every rank must call
/// the same operations in the same order with buffers of the same length.
pub trait Collective: Send + Sync + Debug {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Replace `buf` on every rank by the element-wise sum of every rank's `buf`.
    fn all_reduce_sum_f32(&self, buf: &mut [f32]) -> Result<()>;
    /// [`Collective::all_reduce_sum_f32`] in f64 (metrics, step counts).
    fn all_reduce_sum_f64(&self, buf: &mut [f64]) -> Result<()>;
}

/// The process group of this process, once installed.
static COLLECTIVE: OnceLock<Arc<dyn Collective>> = OnceLock::new();

/// Make `collective` this process's group. Call once, before building training tasks (their
/// loaders read [`rank`] and [`world_size`] when built); a second call is an error.
pub fn install(collective: Arc<dyn Collective>) -> Result<()> {
    COLLECTIVE
        .set(collective)
        .map_err(|_| TrainError::distributed("a process group is already installed in this process"))
}

/// The installed process group with more than one rank, if any.
pub fn collective() -> Option<&'static dyn Collective> {
    COLLECTIVE.get().map(|c| c.as_ref()).filter(|c| c.size() > 1)
}

/// This process's rank (0 without a process group).
pub fn rank() -> usize {
    COLLECTIVE.get().map_or(0, |c| c.rank())
}

/// Number of ranks (1 without a process group).
pub fn world_size() -> usize {
    COLLECTIVE.get().map_or(1, |c| c.size())
}

/// Whether this process writes the run's files (rank 0; always true without a group).
pub fn is_leader() -> bool {
    rank() == 0
}

/// Replace `values` by their mean over the ranks of `group` (unchanged with one rank).
pub fn mean_over_ranks(group: &dyn Collective, values: &mut [f64]) -> Result<()> {
    if group.size() > 1 {
        group.all_reduce_sum_f64(values)?;
        let n = group.size() as f64;
        values.iter_mut().for_each(|v| *v /= n);
    }
    Ok(())
}

/// Check that every rank of `group` holds the same `value` (e.g. the step it resumed from);
/// an error naming `what` and this rank's value otherwise. Every rank learns of a mismatch:
/// the sums of `value` and `value²` equal `n·value` and `n·value²` on every rank only when all
/// values are equal (exact in f64 for values below 2²⁶).
pub fn ensure_same_on_all_ranks(group: &dyn Collective, value: u64, what: &str) -> Result<()> {
    let n = group.size() as f64;
    let v = value as f64;
    let mut sums = [v, v * v];
    group.all_reduce_sum_f64(&mut sums)?;
    if sums != [n * v, n * v * v] {
        return Err(TrainError::distributed(format!(
            "ranks disagree on {what}: rank {} has {value}, the mean over {} ranks is {}",
            group.rank(),
            group.size(),
            sums[0] / n
        )));
    }
    Ok(())
}

/// The seed of this rank's random draws inside a step (dropout, masks): the run seed on rank
/// 0, a seed derived from `(seed, "rank", r)` on rank `r > 0`, so ranks draw independent masks
/// for their different samples while a one-process run is unchanged. Data order does not use
/// it: loaders shard the run seed's global order.
pub fn rank_seed(seed: u64, rank: usize) -> u64 {
    if rank == 0 {
        seed
    } else {
        jinn_data::rng::derive_seed(seed, "rank", rank as u64)
    }
}

#[cfg(test)]
pub(crate) mod tests;
