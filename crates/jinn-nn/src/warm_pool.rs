//! Keep the rayon pool's other threads awake between the parallel ops of a training step.
//!
//! A training step on the CPU is a few hundred parallel ops (matmuls, norms, attention)
//! separated by short serial stretches on the issuing thread. Rayon puts an idle worker to
//! sleep after a few dozen `sched_yield`s, so nearly every op starts by waking it through a
//! futex (a system call and, in a virtual machine, an inter-processor interrupt) and ends with
//! the worker going back to sleep: a per-thread profile of the jasmine-small LAM step put these
//! switches at ≈ 4 % of each thread's samples, plus the latency before the woken worker starts.
//! [`WarmPool`] parks one job on every other thread of the pool that polls for work with
//! `rayon::yield_now` (running whatever the issuing thread's ops push) until the guard is
//! dropped, so no thread sleeps while steps run. The price is a busy core between ops; use it
//! around compute loops only, never around waiting (a server, a prompt). On a machine shared
//! with other work, `JINN_POOL_SLEEP=1` in the environment turns it off (the guards do nothing).
//!
//! Written by hand because rayon has no setting for how long an idle worker spins.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// While alive, the other threads of the current rayon pool poll for work instead of sleeping.
/// Dropping it stops them and waits until every poller has returned to the pool.
#[must_use = "the pool stays warm only while the guard is alive"]
pub struct WarmPool {
    shared: Arc<Shared>,
}

/// The state the guard shares with its pollers.
struct Shared {
    /// Set when the guard drops: pollers return.
    stop: AtomicBool,
    /// Pollers spawned and not yet returned.
    live: AtomicUsize,
    /// The pool thread that made the guard: a poller that lands there returns at once, since
    /// that thread must go on with the caller's work (it would otherwise poll forever).
    owner: Option<usize>,
}

impl WarmPool {
    /// Keep the current pool's other threads polling. Outside a rayon pool thread, on a pool of
    /// one thread, or with `JINN_POOL_SLEEP` set, it does nothing (there is no thread to keep
    /// awake for the caller, or the user asked for none).
    pub fn new() -> Self {
        let owner = rayon::current_thread_index();
        let pollers = match owner {
            Some(_) if !pool_sleep_requested() => rayon::current_num_threads() - 1,
            _ => 0,
        };
        let shared =
            Arc::new(Shared { stop: AtomicBool::new(false), live: AtomicUsize::new(pollers), owner });
        for _ in 0..pollers {
            let shared = Arc::clone(&shared);
            rayon::spawn(move || {
                if rayon::current_thread_index() != shared.owner {
                    poll_until_stopped(&shared.stop);
                }
                shared.live.fetch_sub(1, Ordering::Release);
            });
        }
        Self { shared }
    }

    /// Pollers currently parked on pool threads (for tests).
    pub fn live_pollers(&self) -> usize {
        self.shared.live.load(Ordering::Acquire)
    }
}

impl Default for WarmPool {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for WarmPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // A poller not yet started may be picked up here by the owner, which then returns it at
        // once; so this wait always ends.
        while self.shared.live.load(Ordering::Acquire) > 0 {
            if rayon::yield_now().is_none() {
                std::thread::yield_now();
            }
        }
    }
}

/// Whether `JINN_POOL_SLEEP` is set (read once per process).
fn pool_sleep_requested() -> bool {
    static SLEEP: OnceLock<bool> = OnceLock::new();
    *SLEEP.get_or_init(|| std::env::var_os("JINN_POOL_SLEEP").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Run pool jobs as they appear until `stop`. With none to run it yields the core to the
/// kernel (`sched_yield`: at once back here when nothing else is runnable on this core, while
/// a loader thread or another process that is runnable gets its turn).
fn poll_until_stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WarmPool;
    use rayon::prelude::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a test pool")
    }

    #[test]
    fn parallel_work_runs_while_warm_and_every_poller_returns() {
        pool(3).install(|| {
            let warm = WarmPool::new();
            // Two pollers on the other two threads (or finished, if they landed on this one).
            assert!(warm.live_pollers() <= 2);
            let sum: u64 = (0..100_000u64).into_par_iter().map(|v| v * 2).sum();
            assert_eq!(sum, 100_000 * 99_999);
            let shared = std::sync::Arc::clone(&warm.shared);
            drop(warm);
            assert_eq!(shared.live.load(std::sync::atomic::Ordering::Acquire), 0);
        });
    }

    #[test]
    fn the_poller_stays_parked_on_the_other_thread_until_the_guard_drops() {
        pool(2).install(|| {
            let warm = WarmPool::new();
            let shared = std::sync::Arc::clone(&warm.shared);
            // This thread does not enter rayon meanwhile, so the poller can only have been taken
            // by the other thread, and it must still be polling there (not returned).
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(warm.live_pollers(), 1, "the poller returned while the guard lives");
            // Work pushed now is run (partly) by the polling thread, and the results are exact.
            let squares: u64 = (0..10_000u64).into_par_iter().map(|v| v * v).sum();
            assert_eq!(squares, (0..10_000u64).map(|v| v * v).sum::<u64>());
            drop(warm);
            assert_eq!(shared.live.load(std::sync::atomic::Ordering::Acquire), 0);
        });
    }

    #[test]
    fn nested_guards_and_repeated_guards_finish() {
        pool(2).install(|| {
            for _ in 0..50 {
                let outer = WarmPool::new();
                let inner = WarmPool::new();
                let n = (0..1000).into_par_iter().filter(|v| v % 3 == 0).count();
                assert_eq!(n, 334);
                drop(inner);
                drop(outer);
            }
        });
    }

    #[test]
    fn outside_a_pool_and_on_one_thread_it_spawns_nothing() {
        assert_eq!(WarmPool::new().live_pollers(), 0);
        pool(1).install(|| assert_eq!(WarmPool::new().live_pollers(), 0));
    }
}
