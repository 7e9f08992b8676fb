//! Process-wide allocator settings for tensor workloads.
//!
//! Burn's CPU backend allocates a fresh buffer for nearly every op; in a jasmine-small tokenizer
//! step most are 0.25–8 MB. glibc serves blocks above its mmap threshold (128 kB at start,
//! raised only as such blocks are freed) with a fresh `mmap`, and hands freed heap tops back to
//! the kernel, so many of those buffers arrive as untouched pages: every 4 kB page then costs a
//! page fault plus zeroing. Raising the mmap threshold to glibc's maximum (32 MB on 64-bit) and
//! the trim threshold far above it keeps freed buffers in the heap for reuse, which removes
//! about half of the page faults of a training step. Peak RSS changes little: the freed buffers
//! are the ones the next step needs again.
//!
//! The trim threshold governs only glibc's main arena. A thread other than the main one
//! allocates from a per-thread arena built of 64 MB heaps, and glibc unmaps such a heap as soon
//! as it is wholly free, whatever the threshold: a step whose peak spans one more heap than its
//! trough then maps, faults in and unmaps that heap every step (16k page faults per
//! jasmine-small tokenizer step with the fused layer norm when the command ran on such a
//! thread). So the command runs on the main thread, which joins the compute pool as one of its
//! workers (`on_compute_pool`) and keeps the main arena. The other threads may have arenas of
//! their own, one per core (`M_ARENA_MAX` = 1 + cores): with a single arena, the thread ranks of
//! `train.local_ranks` took its lock for every tensor buffer, and two ranks on 2 cores ran the
//! demo's dynamics step at 87 ms instead of 77. A pool's matmul workers allocate little (their
//! small blocks come from glibc's per-thread caches).

/// glibc's largest allowed `M_MMAP_THRESHOLD` on 64-bit targets (`4 · 1024 · 1024 · sizeof(long)`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// Freed memory at the top of the heap is returned to the kernel only above this (1 GB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 1 << 30;

/// The main arena and one per core (see the module docs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn arena_max() -> libc::c_int {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    libc::c_int::try_from(1 + cores).unwrap_or(libc::c_int::MAX)
}

/// Apply the settings above (glibc only; a no-op elsewhere). Call once, first thing in `main`,
/// before other threads start.
pub fn keep_freed_tensor_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes allocator parameters; it is called before any other
    // thread exists, with parameter values glibc documents as valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        libc::mallopt(libc::M_ARENA_MAX, arena_max());
    }
}
