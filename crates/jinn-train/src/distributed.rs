//! Data parallelism across processes (ranks): every rank holds the whole model, trains on its
//! own shard of each global batch, and the ranks average their gradients before the
//! identical optimiser update.
//!
//! The transport is a [`Collective`]: MPI ([`mpi`], cargo feature `mpi`), installed once per
//! process with [`install`] before the training tasks are built, or threads of one process
//! ([`threads`]: `train.local_ranks`), each of which runs its rank inside [`as_rank`]. Nothing
//! is installed in a plain run: [`rank`] is 0, [`world_size`] is 1 and every function here is a
//! no-op, so single-process training is untouched. The process group is process-wide state by
//! nature (MPI is initialised once per process), hence one global (or, for thread ranks, one
//! per thread) rather than a handle passed through every task constructor.
//!
//! What each part of a run does with it:
//! - **loaders** shard each global batch by [`rank`] / [`world_size`] (the jinn-data loader's
//!   rank slice of `batch × world` samples), so the data order of `N` ranks × batch `B` equals
//!   one rank × batch `N·B`;
//! - **the update** ([`crate::train_loop::Updater::step`]) averages the gradients over ranks
//!   ([`average_gradients`], flattened into buckets of [`BUCKET_BYTES`]) between backward and
//!   clipping, for every task alike;
//! - **random draws inside a step** (dropout, masks, noise) are keyed to the run seed and the
//!   global index of the sample they belong to
//!   ([`crate::train_loop::MicroContext::first_sample`]), and dead-code resets reduce their
//!   usage counts over ranks ([`sum_counts_over_ranks`]), so `N` ranks × batch `B` compute
//!   what one rank × batch `N·B` computes;
//! - **the loop** ([`crate::train_loop::run`]) checks the ranks resumed from the same step,
//!   averages logged metrics over ranks, and lets rank 0 alone validate, write images, metrics
//!   and checkpoints. Checkpoints hold no rank count, so a run may resume on any number of
//!   ranks.

pub mod gradients;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod threads;

pub use gradients::{average_gradients, BUCKET_BYTES};

use crate::error::{Result, TrainError};
use std::cell::RefCell;
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

thread_local! {
    /// The group of a thread that runs one rank of [`threads`] ([`as_rank`]).
    static THREAD_GROUP: RefCell<Option<Arc<dyn Collective>>> = const { RefCell::new(None) };
}

/// Run `f` as rank `group.rank()` of `group` on this thread: inside it [`rank`],
/// [`world_size`] and [`collective`] answer for `group`. An error if the process is already
/// part of an MPI job (one kind of group at a time).
pub fn as_rank<R>(group: Arc<dyn Collective>, f: impl FnOnce() -> R) -> Result<R> {
    if COLLECTIVE.get().is_some_and(|c| c.size() > 1) {
        return Err(TrainError::config(
            "train.local_ranks",
            "must be 1 in an MPI job (ranks are processes there); run without mpirun for thread ranks",
        ));
    }
    /// Clears the thread's group when `f` returns or unwinds.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            THREAD_GROUP.with(|g| g.borrow_mut().take());
        }
    }
    THREAD_GROUP.with(|g| *g.borrow_mut() = Some(group));
    let _reset = Reset;
    Ok(f())
}

/// The group this thread trains in: its thread group ([`as_rank`]), else the installed
/// process group; `None` when there is none or it has one rank.
pub fn collective() -> Option<Arc<dyn Collective>> {
    THREAD_GROUP.with(|g| g.borrow().clone()).or_else(|| COLLECTIVE.get().cloned()).filter(|c| c.size() > 1)
}

/// This rank (0 without a group).
pub fn rank() -> usize {
    collective().map_or(0, |c| c.rank())
}

/// Number of ranks (1 without a group).
pub fn world_size() -> usize {
    collective().map_or(1, |c| c.size())
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

/// Replace `counts` on every rank by their sums over the ranks of the installed group (a
/// no-op without one): the per-code usage of a whole global batch, from which every rank then
/// decides the same dead-code resets.
pub fn sum_counts_over_ranks(counts: &mut [u64]) -> Result<()> {
    match collective() {
        Some(group) => sum_counts(group.as_ref(), counts),
        None => Ok(()),
    }
}

/// Every rank's `rows` in rank order, on every rank (rank `r`'s values at offset
/// `r · rows.len()`); without a group, `rows` itself. For decisions that need the whole
/// global batch, such as resetting a dead code to a random encoder output of the batch.
pub fn gather_over_ranks(rows: &[f32]) -> Result<Vec<f32>> {
    match collective() {
        Some(group) => gather(group.as_ref(), rows),
        None => Ok(rows.to_vec()),
    }
}

/// [`sum_counts_over_ranks`] over `group`. Summed in f64: exact below 2⁵³.
pub(crate) fn sum_counts(group: &dyn Collective, counts: &mut [u64]) -> Result<()> {
    let mut values: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    group.all_reduce_sum_f64(&mut values)?;
    counts.iter_mut().zip(values).for_each(|(c, v)| *c = v as u64);
    Ok(())
}

/// [`gather_over_ranks`] over `group`: a sum in which every other rank contributes zeros at
/// this rank's offset, so the values arrive unchanged.
pub(crate) fn gather(group: &dyn Collective, rows: &[f32]) -> Result<Vec<f32>> {
    let len = rows.len();
    ensure_same_on_all_ranks(group, len as u64, "the number of values each rank gathers")?;
    let mut all = vec![0.0f32; len * group.size()];
    all[group.rank() * len..(group.rank() + 1) * len].copy_from_slice(rows);
    group.all_reduce_sum_f32(&mut all)?;
    Ok(all)
}

#[cfg(test)]
pub(crate) mod tests;
