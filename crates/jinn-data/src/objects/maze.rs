//! The maze view's coins and scrolling, read from frames.

use super::{distance, unmix, Pixels};
use crate::envs::maze::{AGENT_IN_VIEW, COIN, FLOOR, TILE, VIEW_TILES, WALL};
use crate::envs::raster::Rgb;
use crate::episode::FrameShape;
use crate::error::Result;

/// Tiles whose mean colours differ by more than this (Euclidean RGB) show different things:
/// half the distance between the two floor shades, the closest pair of tile contents.
const TILE_MATCH_TOLERANCE: f64 = 13.4;
/// Largest share of compared tiles a shift may leave unmatched and still explain a change.
const MAX_UNMATCHED_SHARE: f64 = 0.25;
/// A shift explains the change only when every other shift leaves at least this many more
/// tiles unmatched.
const MIN_UNMATCHED_MARGIN: usize = 2;

/// The moves a step can make: none, or one tile along one axis.
const SHIFTS: [[i32; 2]; 5] = [[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]];

/// What the detector sees in one maze frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MazeObjects {
    /// Coins visible: view tiles (other than the agent's) whose centre is mostly coin colour.
    pub coins: usize,
}

/// Count the coins in a maze frame, `[H, W, 3]` u8 of `shape`. Each view tile's centre
/// block (the middle half of the tile per axis, inside the coin's disc) is unmixed into coin
/// and wall colour over the floor; it holds a coin when more than half of it is coin colour.
/// The agent's tile is skipped: the agent stands on it and hides it.
pub fn detect_maze(frame: &[u8], shape: FrameShape) -> Result<MazeObjects> {
    let pixels = Pixels::new(frame, shape)?;
    let floor: Rgb = [0, 1, 2].map(|k| ((FLOOR[0][k] as u16 + FLOOR[1][k] as u16) / 2) as u8);
    let mut coins = 0;
    for (vx, vy) in view_tiles().filter(|&t| t != (AGENT_IN_VIEW, AGENT_IN_VIEW)) {
        let (l, t) = (vx * TILE, vy * TILE);
        let (q0, q1) = (TILE / 4, TILE - TILE / 4);
        let mean = pixels.mean(pixels.rows(t + q0, t + q1), pixels.cols(l + q0, l + q1));
        coins += usize::from(mean.is_some_and(|m| unmix(m, floor, COIN, WALL).0 > 0.5));
    }
    Ok(MazeObjects { coins })
}

/// The view's displacement from `prev` to `next` in tiles `(dx, dy)`: the agent's move, none
/// or one tile along one axis (`next` shows at each view tile what `prev` showed one tile
/// over, against the move). `None` when no such shift explains the change, or when more than
/// one does equally well (a view without features). Both frames are `[H, W, 3]` u8 of
/// `shape`.
///
/// Each view tile is summarised by its mean colour, which blur and noise barely move; a
/// shift explains the change when it matches all but a small share of the tiles both frames
/// show (the agent's tile and the one it left are skipped) and clearly beats every other
/// shift.
pub fn maze_displacement(prev: &[u8], next: &[u8], shape: FrameShape) -> Result<Option<[i32; 2]>> {
    let (prev, next) = (tile_means(&Pixels::new(prev, shape)?), tile_means(&Pixels::new(next, shape)?));
    let agent = (AGENT_IN_VIEW, AGENT_IN_VIEW);
    let unmatched: Vec<(usize, usize)> = SHIFTS
        .iter()
        .map(|&[dx, dy]| {
            let (mut compared, mut unmatched) = (0, 0);
            for (tx, ty) in view_tiles() {
                let (sx, sy) = (tx + dx, ty + dy);
                if !(0..VIEW_TILES).contains(&sx) || !(0..VIEW_TILES).contains(&sy) {
                    continue;
                }
                if (tx, ty) == agent || (sx, sy) == agent {
                    continue;
                }
                compared += 1;
                let d = distance(next[index(tx, ty)], prev[index(sx, sy)]);
                unmatched += usize::from(d > TILE_MATCH_TOLERANCE);
            }
            (unmatched, compared)
        })
        .collect();
    let best = (0..SHIFTS.len()).min_by_key(|&i| unmatched[i].0).expect("SHIFTS is not empty");
    let (misses, compared) = unmatched[best];
    let explains = misses as f64 <= MAX_UNMATCHED_SHARE * compared as f64;
    let clear = unmatched.iter().enumerate().all(|(i, u)| i == best || u.0 >= misses + MIN_UNMATCHED_MARGIN);
    Ok((explains && clear).then_some(SHIFTS[best]))
}

/// Every view tile (column, row).
fn view_tiles() -> impl Iterator<Item = (i32, i32)> {
    (0..VIEW_TILES).flat_map(|vy| (0..VIEW_TILES).map(move |vx| (vx, vy)))
}

fn index(vx: i32, vy: i32) -> usize {
    (vy * VIEW_TILES + vx) as usize
}

/// Mean colour of each view tile, `[VIEW_TILES, VIEW_TILES]` row-major.
fn tile_means(pixels: &Pixels) -> Vec<[f64; 3]> {
    view_tiles()
        .map(|(vx, vy)| {
            let (l, t) = (vx * TILE, vy * TILE);
            // Never empty: every logical rectangle covers at least one pixel.
            pixels.mean(pixels.rows(t, t + TILE), pixels.cols(l, l + TILE)).unwrap_or_default()
        })
        .collect()
}
