//! Which slot of frame `t − 1` each slot of frame `t` reads for each offset of the
//! previous-frame neighbourhood (`previous_frame_radius`), on the tokenizer's patch grid.

/// The offsets `(dy, dx)` with `|dy|, |dx| ≤ radius`, row-major, without `(0, 0)` (the slot's
/// own position, read through the previous-frame table).
pub fn offsets(radius: usize) -> Vec<(isize, isize)> {
    let r = radius as isize;
    (-r..=r).flat_map(|dy| (-r..=r).map(move |dx| (dy, dx))).filter(|&o| o != (0, 0)).collect()
}

/// For a grid of `n` slots in rows of `cols` and one offset: the slot each slot reads
/// (row-major index; 0 where the offset leaves the grid) and whether it lies on the grid
/// (1 or 0, the factor of the read row).
pub fn sources(n: usize, cols: usize, (dy, dx): (isize, isize)) -> (Vec<i64>, Vec<f32>) {
    let rows = (n / cols) as isize;
    (0..n)
        .map(|slot| {
            let (y, x) = ((slot / cols) as isize + dy, (slot % cols) as isize + dx);
            if (0..rows).contains(&y) && (0..cols as isize).contains(&x) {
                ((y * cols as isize + x) as i64, 1.0)
            } else {
                (0, 0.0)
            }
        })
        .unzip()
}
