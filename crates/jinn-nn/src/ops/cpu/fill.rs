//! New f32 buffers written by parallel tasks, without a serial zero-fill first.
//!
//! `vec![0.0; n]` of a few megabytes is a `memset` on the calling thread (the allocator reuses
//! freed heap memory, so `calloc` cannot hand out fresh zero pages), while the other cores wait;
//! the CPU kernels then overwrite every element anyway. [`par_fill`] gives each rayon task its
//! own chunk of each output, zeroes it while it is about to be written (cache-hot, part of the
//! parallel pass) and lets the task fill it. Written by hand because no crate offers this.

use rayon::prelude::*;
use std::mem::MaybeUninit;

/// A raw pointer to a buffer's spare capacity, shared by tasks that write disjoint ranges.
#[derive(Clone, Copy)]
struct Spare(*mut MaybeUninit<f32>);

// SAFETY: tasks write disjoint ranges of the buffer behind the pointer (see `par_fill`).
unsafe impl Send for Spare {}
// SAFETY: as above.
unsafe impl Sync for Spare {}

/// `N` new buffers of `lens[j]` elements, cut into `tasks` consecutive chunks of `chunks[j]`
/// elements each (the last chunk may be shorter), and the results of `fill(i, [chunk i of each
/// buffer])` in task order. Chunks reach `fill` zeroed; the tasks run on the rayon pool,
/// `min_tasks` or more per rayon job. `tasks = ⌈lens[j] / chunks[j]⌉` must agree for every
/// buffer (the buffers are cut in step: row `i` of several outputs, say).
pub(super) fn par_fill<const N: usize, R: Send>(
    lens: [usize; N],
    chunks: [usize; N],
    min_tasks: usize,
    fill: impl Fn(usize, [&mut [f32]; N]) -> R + Sync,
) -> ([Vec<f32>; N], Vec<R>) {
    let tasks = lens[0].div_ceil(chunks[0].max(1));
    for j in 0..N {
        assert!(
            chunks[j] > 0 && lens[j].div_ceil(chunks[j]) == tasks,
            "par_fill: buffer {j} of {} in chunks of {} is not {tasks} tasks",
            lens[j],
            chunks[j]
        );
    }
    let mut buffers: [Vec<f32>; N] = std::array::from_fn(|j| Vec::with_capacity(lens[j]));
    let spare: [Spare; N] = std::array::from_fn(|j| Spare(buffers[j].spare_capacity_mut().as_mut_ptr()));
    let results: Vec<R> = (0..tasks)
        .into_par_iter()
        .with_min_len(min_tasks.max(1))
        .map(|i| {
            let parts = std::array::from_fn(|j| {
                let start = i * chunks[j];
                let len = chunks[j].min(lens[j] - start);
                // SAFETY: task i alone touches [start, start + len), inside the capacity of
                // `lens[j]` elements; every element is written (zeroed) before the slice is
                // read as f32.
                unsafe {
                    let part = std::slice::from_raw_parts_mut(spare[j].0.add(start), len);
                    part.fill(MaybeUninit::new(0.0));
                    &mut *(part as *mut [MaybeUninit<f32>] as *mut [f32])
                }
            });
            fill(i, parts)
        })
        .collect();
    for (buffer, len) in buffers.iter_mut().zip(lens) {
        // SAFETY: `collect` returned, so every task ran and zeroed (then filled) its chunk;
        // the chunks cover [0, len). A panicking task unwinds before this point.
        unsafe { buffer.set_len(len) };
    }
    (buffers, results)
}

#[cfg(test)]
mod tests {
    use super::par_fill;

    #[test]
    fn every_element_is_written_by_its_task_in_order() {
        // 1000 rows of 3 and of 5 elements, 7 rows per task: 143 tasks, the last one partial.
        let (rows, per_task) = (1000, 7);
        let ([a, b], sums) = par_fill([rows * 3, rows * 5], [per_task * 3, per_task * 5], 4, |i, [a, b]| {
            assert!(a.iter().chain(b.iter()).all(|&v| v == 0.0), "task {i}: chunk not zeroed");
            for (k, v) in a.iter_mut().enumerate() {
                *v = (i * per_task * 3 + k) as f32;
            }
            for (k, v) in b.iter_mut().enumerate() {
                *v = -((i * per_task * 5 + k) as f32);
            }
            a.len() + b.len()
        });
        assert_eq!(a, (0..rows * 3).map(|k| k as f32).collect::<Vec<_>>());
        assert_eq!(b, (0..rows * 5).map(|k| -(k as f32)).collect::<Vec<_>>());
        assert_eq!(sums.len(), rows.div_ceil(per_task));
        assert_eq!(sums.iter().sum::<usize>(), rows * 8);
        assert_eq!(*sums.last().unwrap(), (rows % per_task) * 8);
    }

    #[test]
    fn an_empty_buffer_is_no_task() {
        let ([v], results) = par_fill([0], [16], 1, |_, [_]: [&mut [f32]; 1]| ());
        assert!(v.is_empty() && results.is_empty());
    }

    #[test]
    #[should_panic(expected = "is not 3 tasks")]
    fn buffers_cut_into_different_task_counts_are_refused() {
        let _ = par_fill([30, 30], [10, 5], 1, |_, _| ());
    }
}
