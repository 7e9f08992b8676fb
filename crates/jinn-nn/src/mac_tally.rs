//! A per-thread tally of the multiply-accumulates the dense layers and attention matmuls
//! really run (test builds only), so the formulas of [`crate::flops`] are checked against the
//! code rather than against a second hand-written formula.

use std::cell::Cell;

thread_local! {
    static MACS: Cell<u64> = const { Cell::new(0) };
}

/// Adds `macs` to this thread's tally.
pub(crate) fn record(macs: u64) {
    MACS.with(|m| m.set(m.get() + macs));
}

/// Runs `f` and returns its result with the MACs it recorded on this thread.
pub(crate) fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = MACS.with(Cell::get);
    let out = f();
    (out, MACS.with(Cell::get) - before)
}
