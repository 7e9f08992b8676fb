//! Object-level reading of the built-in games' frames: what a person sees (the ball, where it
//! is, the paddle, the bricks left; the maze view's scroll and its coins) rather than how
//! close the pixels are.
//!
//! Everything is computed from decoded RGB frames alone, so it applies to a world model's
//! generated frames exactly as to recorded ones. The games draw with a fixed palette on the
//! 64×64 logical canvas of [`crate::envs::raster`]; the detectors reuse that canvas's mapping
//! to find where each object can be at the frame's size, and judge colours by proportions
//! (how much of a pixel is paddle, how much is ball light) so slightly blurred frames with
//! colours off by tens of units read the same as clean ones.
//!
//! Positions are in pixels of the frame, pixel column `c` at `x = c` and row `r` at `y = r`;
//! a logical position `l` is at `l · W / 64` (`l · H / 64` for rows). The renderer draws a
//! pixel when its top-left corner lies inside a shape, so a clean frame's detections are
//! within half a pixel of the true position.
//!
//! - [`detect_breakout`]: ball (present, centre), paddle centre, bricks standing.
//! - [`ball_events`]: where the ball leaves its course in a clip, and why.
//! - [`detect_maze`], [`maze_displacement`]: coins in view, the view's move between frames.
//! - [`off_palette_share`], [`calibrate_off_palette_threshold`]: how much of a frame is drawn
//!   in colours the game never uses.

mod ball_events;
mod breakout;
mod maze;
#[cfg(test)]
mod tests;

pub use ball_events::{
    ball_at_rest_height, ball_events, ball_moves_as_in_the_game, first_vanishing, BallEvent, BallVanishing,
    VanishPlace, BALL_EVENTS, VANISH_PLACES,
};
pub use breakout::{breakout_paddle_range, breakout_paddle_step, detect_breakout, BreakoutObjects};
pub use maze::{detect_maze, maze_displacement, MazeObjects};

use crate::envs::raster::{to_pixels, Rgb};
use crate::envs::{self, check_frame_shape};
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use std::ops::Range;

/// Default distance (Euclidean, RGB units) beyond which a pixel counts as off-palette.
///
/// Far above the ±20 units per channel of noise on flat areas (at most 35 units away), and
/// high enough that the mixed colours along edges of 3×3-box-blurred real frames mostly stay
/// on-palette: at most 6% of such a frame's pixels are farther (Breakout's one-unit gaps
/// between bricks blur into 30% of the frame at 48), while about 30% (Breakout, 11 colours)
/// and 50% (maze, 9 colours) of a frame of uniformly random colours are. Callers calibrate
/// their own with [`calibrate_off_palette_threshold`] on the tokenizer's reconstructions of
/// real frames.
pub const DEFAULT_OFF_PALETTE_THRESHOLD: f64 = 80.0;

/// A built-in game whose frames the detectors read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Game {
    /// [`crate::envs::breakout`].
    Breakout,
    /// [`crate::envs::maze`].
    Maze,
}

impl Game {
    /// The game behind environment `name` (one of [`crate::envs::ENV_NAMES`]); `None` for
    /// any other name.
    pub fn from_env_name(name: &str) -> Option<Game> {
        match name {
            "breakout" => Some(Game::Breakout),
            "maze" => Some(Game::Maze),
            _ => None,
        }
    }

    /// The environment's name ([`Game::from_env_name`]'s inverse).
    pub fn name(self) -> &'static str {
        match self {
            Game::Breakout => "breakout",
            Game::Maze => "maze",
        }
    }

    /// Every colour the game draws with.
    pub fn palette(self) -> &'static [Rgb] {
        match self {
            Game::Breakout => &envs::breakout::PALETTE,
            Game::Maze => &envs::maze::PALETTE,
        }
    }
}

/// Share of pixels whose colour is farther than `threshold` (Euclidean RGB distance) from
/// every colour of `game`'s palette. `frame` is `[H, W, 3]` u8 of `shape`.
pub fn off_palette_share(frame: &[u8], shape: FrameShape, game: Game, threshold: f64) -> Result<f64> {
    let pixels = Pixels::new(frame, shape)?;
    let palette = game.palette();
    let off = frame.chunks_exact(3).filter(|p| palette_distance(p, palette) > threshold).count();
    Ok(off as f64 / (pixels.height * pixels.width) as f64)
}

/// The smallest threshold at which at most `share` of the pixels of `frames` are
/// off-palette (see [`off_palette_share`]): run it on the tokenizer's reconstructions of real
/// frames, so blur and colour shifts of faithful reconstructions do not count as artefacts.
/// `frames` is `[N, H, W, 3]` u8, `N ≥ 1`, with frames of `shape`.
pub fn calibrate_off_palette_threshold(
    frames: &[u8],
    shape: FrameShape,
    game: Game,
    share: f64,
) -> Result<f64> {
    check_frame_shape(shape)?;
    if frames.is_empty() || !frames.len().is_multiple_of(shape.frame_bytes()) {
        return Err(DataError::invalid(
            "frames",
            format!(
                "{} bytes; expected a positive multiple of {} (frames of {shape:?})",
                frames.len(),
                shape.frame_bytes()
            ),
        ));
    }
    if !(0.0..=1.0).contains(&share) {
        return Err(DataError::invalid("share", format!("{share}; expected a share in [0, 1]")));
    }
    let palette = game.palette();
    let mut distances: Vec<f64> = frames.chunks_exact(3).map(|p| palette_distance(p, palette)).collect();
    distances.sort_by(|a, b| b.total_cmp(a));
    // Sorted farthest first: at most `k` distances exceed `distances[k]`.
    let k = ((share * distances.len() as f64).floor() as usize).min(distances.len() - 1);
    Ok(distances[k])
}

/// Distance from pixel `p` (RGB) to the nearest colour of `palette`.
fn palette_distance(p: &[u8], palette: &[Rgb]) -> f64 {
    palette.iter().map(|&c| distance(to_f64(p), rgb(c))).fold(f64::INFINITY, f64::min)
}

/// One checked `[H, W, 3]` u8 frame.
#[derive(Clone, Copy)]
struct Pixels<'a> {
    frame: &'a [u8],
    height: usize,
    width: usize,
}

impl<'a> Pixels<'a> {
    /// Error unless `frame` holds exactly one RGB frame of `shape`, of a size the games draw.
    fn new(frame: &'a [u8], shape: FrameShape) -> Result<Self> {
        check_frame_shape(shape)?;
        if frame.len() != shape.frame_bytes() {
            return Err(DataError::invalid(
                "frame",
                format!(
                    "{} bytes; a {}x{}x3 frame needs {}",
                    frame.len(),
                    shape.height,
                    shape.width,
                    shape.frame_bytes()
                ),
            ));
        }
        Ok(Pixels { frame, height: shape.height, width: shape.width })
    }

    /// Colour at row `r`, column `c`.
    fn at(&self, r: usize, c: usize) -> [f64; 3] {
        to_f64(&self.frame[(r * self.width + c) * 3..][..3])
    }

    /// Pixel rows covered by logical rows `[l0, l1)`.
    fn rows(&self, l0: i32, l1: i32) -> Range<usize> {
        span(l0, l1, self.height)
    }

    /// Pixel columns covered by logical columns `[l0, l1)`.
    fn cols(&self, l0: i32, l1: i32) -> Range<usize> {
        span(l0, l1, self.width)
    }

    /// Mean colour over `rows × cols`; `None` when the block is empty.
    fn mean(&self, rows: Range<usize>, cols: Range<usize>) -> Option<[f64; 3]> {
        let n = rows.len() * cols.len();
        let mut sum = [0.0; 3];
        for r in rows {
            for c in cols.clone() {
                let p = self.at(r, c);
                (0..3).for_each(|k| sum[k] += p[k]);
            }
        }
        (n > 0).then(|| sum.map(|s| s / n as f64))
    }
}

/// Pixel range covered by logical range `[l0, l1)` on an axis of `pixels` pixels.
fn span(l0: i32, l1: i32, pixels: usize) -> Range<usize> {
    to_pixels(l0, l1, pixels).map_or(0..0, |(p0, p1)| p0..p1)
}

/// `range` less one pixel at each end when it spans at least 3 pixels: the interior that a
/// blur of one pixel's reach leaves untouched.
fn inner(range: Range<usize>) -> Range<usize> {
    if range.len() >= 3 {
        range.start + 1..range.end - 1
    } else {
        range
    }
}

fn to_f64(p: &[u8]) -> [f64; 3] {
    [p[0] as f64, p[1] as f64, p[2] as f64]
}

fn rgb(c: Rgb) -> [f64; 3] {
    to_f64(&c)
}

fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt()
}

/// Least-squares shares `(α, β)` with `colour ≈ base + α·(a − base) + β·(b − base)`: how
/// much of a pixel (or block mean) is `a` and how much `b`, over a background `base`.
fn unmix(colour: [f64; 3], base: Rgb, a: Rgb, b: Rgb) -> (f64, f64) {
    let (base, a, b) = (rgb(base), rgb(a), rgb(b));
    let d = |x: [f64; 3]| [x[0] - base[0], x[1] - base[1], x[2] - base[2]];
    let (u, v, m) = (d(a), d(b), d(colour));
    let dot = |x: [f64; 3], y: [f64; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    let (uu, uv, vv, um, vm) = (dot(u, u), dot(u, v), dot(v, v), dot(u, m), dot(v, m));
    let det = uu * vv - uv * uv;
    if det.abs() < 1e-9 {
        return (um / uu.max(1e-9), 0.0);
    }
    ((um * vv - vm * uv) / det, (vm * uu - um * uv) / det)
}
