//! Ranks that are threads of one process (`train.local_ranks`): each thread trains its own
//! replica of the model on its share of every batch, with its own share of the CPU's cores,
//! and the threads sum their gradients here.
//!
//! On a few cores this is faster than one rank using them all: a training step of a small
//! model is hundreds of short ops, and one rank hands each op's work to the other cores and
//! waits for the slowest, while the serial stretches between ops leave them idle. Ranks of one
//! thread each share nothing but the all-reduce (the demo's dynamics step on 2 cores:
//! docs/performance.md).
//!
//! An all-reduce deposits every rank's buffer and sums the deposits in rank order, so every
//! rank gets bit-identical sums whatever the order the threads arrive in. A rank that fails
//! ([`ThreadRanks::fail`]) wakes the others, whose all-reduces then return an error instead of
//! waiting for it forever.

use super::Collective;
use crate::error::{Result, TrainError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// One rank's handle on a group of thread ranks ([`ThreadRanks::group`]).
#[derive(Debug, Clone)]
pub struct ThreadRanks {
    rank: usize,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    size: usize,
    state: Mutex<Round>,
    done: Condvar,
}

/// The all-reduce in progress and the last one's sum.
#[derive(Debug, Default)]
struct Round {
    /// Completed all-reduces; a rank waits for this to move past the one it joined.
    generation: u64,
    /// Deposits of the ranks that have joined the current all-reduce.
    deposits: Vec<Option<Buffer>>,
    /// The last completed all-reduce's sum (each rank takes its handle before it can deposit
    /// again, so the next sum never replaces one still to be read).
    sum: Option<Arc<Buffer>>,
    /// Set by the first failure: what went wrong.
    failed: Option<String>,
    /// The rank whose failure came first, unless the group itself failed (an all-reduce of
    /// mismatched buffers).
    failed_rank: Option<usize>,
}

/// One rank's values, or their sum.
#[derive(Debug, Clone, PartialEq)]
enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Buffer {
    fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
        }
    }

    /// The element-wise sum of `buffers` (of one kind and length), added in their order.
    fn sum(buffers: &[Buffer]) -> std::result::Result<Buffer, String> {
        let first = &buffers[0];
        for (r, b) in buffers.iter().enumerate() {
            if b.len() != first.len() || std::mem::discriminant(b) != std::mem::discriminant(first) {
                return Err(format!(
                    "ranks all-reduce different buffers ({} values on rank 0, {} on rank {r}, or another type)",
                    first.len(),
                    b.len()
                ));
            }
        }
        fn add<T: Copy + std::ops::AddAssign>(all: &[&Vec<T>]) -> Vec<T> {
            let mut sum = all[0].clone();
            for b in &all[1..] {
                sum.iter_mut().zip(b.iter()).for_each(|(s, &v)| *s += v);
            }
            sum
        }
        Ok(match first {
            Buffer::F32(_) => Buffer::F32(add(&buffers
                .iter()
                .filter_map(|b| match b {
                    Buffer::F32(v) => Some(v),
                    Buffer::F64(_) => None,
                })
                .collect::<Vec<_>>())),
            Buffer::F64(_) => Buffer::F64(add(&buffers
                .iter()
                .filter_map(|b| match b {
                    Buffer::F64(v) => Some(v),
                    Buffer::F32(_) => None,
                })
                .collect::<Vec<_>>())),
        })
    }
}

impl ThreadRanks {
    /// One handle per rank of a `size`-rank group, in rank order.
    pub fn group(size: usize) -> Vec<ThreadRanks> {
        let round = Round { deposits: vec![None; size], ..Round::default() };
        let shared = Arc::new(Shared { size, state: Mutex::new(round), done: Condvar::new() });
        (0..size).map(|rank| ThreadRanks { rank, shared: shared.clone() }).collect()
    }

    /// Mark the group failed (this rank's `why`): every rank's all-reduce, waiting or to come,
    /// returns an error. The first failure is kept.
    pub fn fail(&self, why: &str) {
        let mut state = self.lock();
        if state.failed.is_none() {
            state.failed = Some(format!("rank {} failed: {why}", self.rank));
            state.failed_rank = Some(self.rank);
        }
        self.shared.done.notify_all();
    }

    /// The rank whose failure came first, if a rank failed.
    fn first_failed_rank(&self) -> Option<usize> {
        self.lock().failed_rank
    }

    fn lock(&self) -> MutexGuard<'_, Round> {
        // No user code runs under the lock, so a poisoned lock still holds a consistent round.
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failed(state: &Round) -> Result<()> {
        match &state.failed {
            Some(why) => Err(TrainError::distributed(format!("stopped: {why}"))),
            None => Ok(()),
        }
    }

    /// The element-wise sum of every rank's `values`, added in rank order (so every rank gets
    /// the same bits, whichever thread comes last).
    fn reduce(&self, values: Buffer) -> Result<Arc<Buffer>> {
        let mut state = self.lock();
        Self::failed(&state)?;
        let generation = state.generation;
        state.deposits[self.rank] = Some(values);
        if state.deposits.iter().all(Option::is_some) {
            let deposits: Vec<Buffer> = state.deposits.iter_mut().filter_map(Option::take).collect();
            match Buffer::sum(&deposits) {
                Ok(sum) => state.sum = Some(Arc::new(sum)),
                Err(why) => state.failed = Some(why),
            }
            state.generation += 1;
            self.shared.done.notify_all();
        } else {
            while state.generation == generation && state.failed.is_none() {
                state = self.shared.done.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        Self::failed(&state)?;
        Ok(state.sum.clone().expect("a completed all-reduce leaves its sum"))
    }
}

impl Collective for ThreadRanks {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_reduce_sum_f32(&self, buf: &mut [f32]) -> Result<()> {
        match self.reduce(Buffer::F32(buf.to_vec()))?.as_ref() {
            Buffer::F32(sum) => buf.copy_from_slice(sum),
            Buffer::F64(_) => unreachable!("an f32 all-reduce sums f32 buffers"),
        }
        Ok(())
    }

    fn all_reduce_sum_f64(&self, buf: &mut [f64]) -> Result<()> {
        match self.reduce(Buffer::F64(buf.to_vec()))?.as_ref() {
            Buffer::F64(sum) => buf.copy_from_slice(sum),
            Buffer::F32(_) => unreachable!("an f64 all-reduce sums f64 buffers"),
        }
        Ok(())
    }
}

/// Run `rank(r)` for every rank `r` of a `size`-rank group, each on a rayon pool of its own
/// with `threads` threads (the rank's share of the cores, which the CPU kernels and Burn's CPU
/// backend then use) and inside [`super::as_rank`] with its handle; results in rank order. A
/// rank that returns an error or panics fails the group ([`ThreadRanks::fail`]) so the others
/// stop at their next all-reduce; the error returned is then the failing rank's own, not the
/// others' "stopped" errors.
pub fn run_ranks<R: Send, E: std::fmt::Display + Send>(
    size: usize,
    threads: usize,
    rank: impl Fn(usize) -> std::result::Result<R, E> + Sync,
) -> std::result::Result<Vec<R>, RankError<E>> {
    let handles = ThreadRanks::group(size);
    let outcomes: Vec<std::thread::Result<Result<std::result::Result<R, E>>>> = std::thread::scope(|s| {
        let spawned: Vec<_> = handles
            .iter()
            .cloned()
            .map(|handle| {
                let rank = &rank;
                s.spawn(move || {
                    /// Fails the group unless the rank finished without an error.
                    struct FailUnlessDone(ThreadRanks, bool);
                    impl Drop for FailUnlessDone {
                        fn drop(&mut self) {
                            if !self.1 {
                                self.0.fail("panicked (message above)");
                            }
                        }
                    }
                    let mut guard = FailUnlessDone(handle.clone(), false);
                    let out = on_rank_pool(&handle, threads, || rank(handle.rank));
                    match &out {
                        Ok(Err(e)) => handle.fail(&e.to_string()),
                        Err(e) => handle.fail(&e.to_string()),
                        Ok(Ok(_)) => {}
                    }
                    guard.1 = true;
                    out
                })
            })
            .collect();
        spawned.into_iter().map(|t| t.join()).collect()
    });
    let first_failed = handles[0].first_failed_rank();
    let mut results = Vec::with_capacity(size);
    let mut errors = Vec::new();
    for (r, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok(Ok(Ok(v))) => results.push(v),
            Ok(Ok(Err(e))) => errors.push(RankError::Task(r, e)),
            Ok(Err(e)) => errors.push(RankError::Group(r, e)),
            Err(_) => errors.push(RankError::Panic(r)),
        }
    }
    if errors.is_empty() {
        return Ok(results);
    }
    let first = errors.iter().position(|e| Some(e.rank()) == first_failed).unwrap_or(0);
    Err(errors.swap_remove(first))
}

/// `f` as `handle`'s rank on a new rayon pool of `threads` threads (8 MiB stacks, as a main
/// thread has). The rank's group is set on the pool thread that runs `f`.
fn on_rank_pool<T: Send>(handle: &ThreadRanks, threads: usize, f: impl FnOnce() -> T + Send) -> Result<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name({
            let rank = handle.rank;
            move |i| format!("jinn-rank{rank}-{i}")
        })
        .stack_size(8 << 20)
        .build()
        .map_err(|e| TrainError::distributed(format!("starting rank {}'s threads: {e}", handle.rank)))?;
    let group: Arc<dyn Collective> = Arc::new(handle.clone());
    pool.install(|| super::as_rank(group, f))
}

/// How a run of thread ranks failed ([`run_ranks`]).
#[derive(Debug)]
pub enum RankError<E> {
    /// The rank's own error.
    Task(usize, E),
    /// The rank stopped because another failed, or the group itself failed.
    Group(usize, TrainError),
    /// The rank panicked.
    Panic(usize),
}

impl<E> RankError<E> {
    /// The rank the error comes from.
    pub fn rank(&self) -> usize {
        match self {
            RankError::Task(r, _) | RankError::Group(r, _) | RankError::Panic(r) => *r,
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for RankError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankError::Task(r, e) if *r == 0 => write!(f, "{e}"),
            RankError::Task(r, e) => write!(f, "rank {r}: {e}"),
            RankError::Group(r, e) => write!(f, "rank {r}: {e}"),
            RankError::Panic(r) => write!(f, "rank {r} panicked"),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for RankError<E> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{rank, world_size};

    #[test]
    fn every_rank_gets_the_rank_order_sum_round_after_round() {
        let rounds = 40;
        /// Each round's f32 and f64 sums on one rank.
        type Sums = Vec<(Vec<f32>, Vec<f64>)>;
        let sums = run_ranks(3, 1, |r| -> std::result::Result<Sums, TrainError> {
            let group = crate::distributed::collective().expect("a group inside run_ranks");
            (0..rounds)
                .map(|i| {
                    // Values whose f32 sum depends on the order they are added in.
                    let mut a: Vec<f32> =
                        (0..5).map(|k| [1e8, 1.0, -1e8][r] * (1.0 + (i * k) as f32 * 1e-3)).collect();
                    let mut b: Vec<f64> = (0..3).map(|k| (r * 10 + k + i) as f64).collect();
                    group.all_reduce_sum_f32(&mut a)?;
                    group.all_reduce_sum_f64(&mut b)?;
                    Ok((a, b))
                })
                .collect()
        })
        .unwrap();
        for i in 0..rounds {
            let want_a: Vec<f32> = (0..5)
                .map(|k| {
                    let v = |r: usize| [1e8f32, 1.0, -1e8][r] * (1.0 + (i * k) as f32 * 1e-3);
                    v(0) + v(1) + v(2)
                })
                .collect();
            let want_b: Vec<f64> = (0..3).map(|k| (0..3).map(|r| (r * 10 + k + i) as f64).sum()).collect();
            for rank_sums in &sums {
                assert_eq!(rank_sums[i].0, want_a, "round {i}: f32 sums not in rank order");
                assert_eq!(rank_sums[i].1, want_b, "round {i}");
            }
        }
    }

    #[test]
    fn a_failing_rank_stops_the_others_and_its_own_error_is_returned() {
        let out = run_ranks(3, 1, |r| {
            let group = crate::distributed::collective().unwrap();
            let mut buf = [r as f32];
            for step in 0.. {
                if r == 1 && step == 3 {
                    return Err("rank one's data ran out".to_string());
                }
                group.all_reduce_sum_f32(&mut buf).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        match out {
            Err(RankError::Task(1, e)) => assert_eq!(e, "rank one's data ran out"),
            other => panic!("expected rank 1's own error, got {other:?}"),
        }
    }

    #[test]
    fn a_panicking_rank_stops_the_others_and_buffers_of_other_lengths_are_an_error() {
        let out = run_ranks(2, 1, |r| -> std::result::Result<(), String> {
            let group = crate::distributed::collective().unwrap();
            if r == 0 {
                panic!("rank 0 gives up");
            }
            loop {
                group.all_reduce_sum_f64(&mut [1.0]).map_err(|e| e.to_string())?;
            }
        });
        assert!(matches!(out, Err(RankError::Panic(0))), "{out:?}");
        let out = run_ranks(2, 1, |r| {
            let mut buf = vec![0.0f32; 2 + r];
            crate::distributed::collective().unwrap().all_reduce_sum_f32(&mut buf).map_err(|e| e.to_string())
        });
        let err = out.unwrap_err().to_string();
        assert!(err.contains("2 values on rank 0, 3 on rank 1"), "{err}");
    }

    #[test]
    fn ranks_see_their_rank_and_a_share_of_the_cores_and_the_thread_forgets_them_after() {
        let seen = run_ranks(2, 3, |_| -> std::result::Result<_, String> {
            Ok((rank(), world_size(), rayon::current_num_threads()))
        })
        .unwrap();
        assert_eq!(seen, vec![(0, 2, 3), (1, 2, 3)]);
        let group: Arc<dyn Collective> = Arc::new(ThreadRanks::group(2).remove(1));
        assert_eq!(crate::distributed::as_rank(group, || (rank(), world_size())).unwrap(), (1, 2));
        assert_eq!((rank(), world_size()), (0, 1), "the group outlived as_rank");
    }
}
