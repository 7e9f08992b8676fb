//! Breakout's ball, paddle and bricks, read from a frame.

use super::{inner, unmix, Pixels};
use crate::envs::breakout::{
    brick_rect, life_rect, BACKGROUND, BALL, BALL_COLOR, BRICK_COLORS, BRICK_COLS, BRICK_ROWS, LIFE_COLOR,
    PADDLE_COLOR, PADDLE_H, PADDLE_SPEED, PADDLE_W, PADDLE_Y, PALETTE, SIDE_WALL, TOP_WALL,
};
use crate::envs::raster::LOGICAL_SIZE;
use crate::episode::FrameShape;
use crate::error::Result;

/// Least share of paddle colour (averaged over the paddle's rows) at which a paddle is seen.
const MIN_PADDLE_SHARE: f64 = 0.25;

/// What the detector sees in one breakout frame; positions in pixels of the frame (see
/// [`super`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BreakoutObjects {
    /// Ball centre (x, y) in px, `None` when no ball is visible: the centroid of the ball's
    /// visible part (a ball falling off the bottom is partly drawn).
    pub ball: Option<[f64; 2]>,
    /// Paddle centre x in px, `None` when no paddle is visible.
    pub paddle_x: Option<f64>,
    /// Bricks standing.
    pub bricks: usize,
    /// Which bricks stand, by row (top first) and column (left first).
    pub standing: [[bool; BRICK_COLS]; BRICK_ROWS],
}

/// The least and the greatest paddle centre x (px) in frames of `shape`: the paddle stops at
/// the side walls.
pub fn breakout_paddle_range(shape: FrameShape) -> [f64; 2] {
    let px = |l: i32| l as f64 * shape.width as f64 / LOGICAL_SIZE as f64;
    [px(SIDE_WALL) + px(PADDLE_W) / 2.0, px(LOGICAL_SIZE - SIDE_WALL) - px(PADDLE_W) / 2.0]
}

/// How far (px) the paddle moves in one step of `left` or `right` in frames of `shape`.
pub fn breakout_paddle_step(shape: FrameShape) -> f64 {
    PADDLE_SPEED as f64 * shape.width as f64 / LOGICAL_SIZE as f64
}

/// Read the ball, paddle and bricks of a breakout frame, `[H, W, 3]` u8 of `shape`.
///
/// - Ball: pixels below the top wall whose darkest channel is far brighter than in any other
///   colour of the game (white light, not paddle cyan or wall grey), grouped into blobs no
///   larger than a ball; the brightest blob's centre is its light-weighted centroid. The
///   lives markers (grey 245, close to the ball's white) sit inside the top wall, which the
///   ball never enters; where the frame is so small that they spill below it, pixels there
///   also have to be nearer white than the markers' grey.
/// - Paddle: across the paddle's rows, each column's share of paddle colour (unmixed from
///   background and ball light); the paddle spans the columns above half the peak share,
///   with sub-pixel edges. Where the ball covers one end, that end is placed from the other
///   and the paddle's width.
/// - Bricks: the mean colour of each brick's interior, unmixed into brick colour and ball
///   light over the background; a brick stands when more than half of it is brick colour.
pub fn detect_breakout(frame: &[u8], shape: FrameShape) -> Result<BreakoutObjects> {
    let pixels = Pixels::new(frame, shape)?;
    let mut standing = [[false; BRICK_COLS]; BRICK_ROWS];
    for (r, row) in standing.iter_mut().enumerate() {
        for (c, brick) in row.iter_mut().enumerate() {
            let (x0, y0, x1, y1) = brick_rect(r, c);
            let mean = pixels.mean(inner(pixels.rows(y0, y1)), inner(pixels.cols(x0, x1)));
            *brick = mean.is_some_and(|m| unmix(m, BACKGROUND, BRICK_COLORS[r], BALL_COLOR).0 > 0.5);
        }
    }
    Ok(BreakoutObjects {
        ball: find_ball(&pixels),
        paddle_x: find_paddle(&pixels),
        bricks: standing.iter().flatten().filter(|&&b| b).count(),
        standing,
    })
}

/// Darkest channel of a colour: 255 for the ball's white, at most 110 for everything else
/// the game draws below the top wall.
fn whiteness(p: [f64; 3]) -> f64 {
    p[0].min(p[1]).min(p[2])
}

fn find_ball(pixels: &Pixels) -> Option<[f64; 2]> {
    let white = whiteness(super::rgb(BALL_COLOR));
    let others = PALETTE
        .iter()
        .filter(|&&c| c != BALL_COLOR && c != LIFE_COLOR)
        .map(|&c| whiteness(super::rgb(c)))
        .fold(0.0, f64::max);
    // Blobs are made of pixels a third of the way from the brightest other colour to white
    // (a blurred two-pixel-tall ball peaks at two thirds); their centroid weighs light beyond
    // a quarter of the way, which takes in blurred rims.
    let seed_level = others + (white - others) / 3.0;
    let floor_level = others + (white - others) / 4.0;
    let rows = pixels.rows(0, TOP_WALL).end..pixels.height;
    // The side walls count only where a pixel is mostly white: at small sizes the ball can
    // take a wall's pixel, but a blurred ball's rim over the wall would pull its centroid.
    let (cols, field) = (0..pixels.width, between_walls(pixels));
    let wall_level = others + (white - others) / 2.0;
    let (_, life_y0, _, life_y1) = life_rect(0);
    let life_rows = pixels.rows(life_y0, life_y1);
    let (ball_rgb, life_rgb) = (super::rgb(BALL_COLOR), super::rgb(LIFE_COLOR));
    // Light of pixel (r, c) beyond `level`, 0 outside the search area or for lives grey.
    let light = |r: usize, c: usize, level: f64| -> f64 {
        if !rows.contains(&r) || !cols.contains(&c) {
            return 0.0;
        }
        let p = pixels.at(r, c);
        if life_rows.contains(&r) && super::distance(p, ball_rgb) >= super::distance(p, life_rgb) {
            return 0.0;
        }
        if !field.contains(&c) && whiteness(p) < wall_level {
            return 0.0;
        }
        (whiteness(p) - level).max(0.0)
    };
    // The largest blob a ball can make: its extent in pixels plus a blurred rim.
    let extent =
        |pixels_per_side: usize| (BALL as usize * pixels_per_side).div_ceil(LOGICAL_SIZE as usize) + 3;
    let max_area = extent(pixels.width) * extent(pixels.height);

    let (h, w) = (pixels.height, pixels.width);
    let mut seen = vec![false; h * w]; // [H, W]
    let mut best: Option<(f64, [usize; 4])> = None; // (light, [r0, r1, c0, c1] inclusive)
    for r in rows.clone() {
        for c in cols.clone() {
            if seen[r * w + c] || light(r, c, seed_level) == 0.0 {
                continue;
            }
            // Flood-fill the blob (8-connected).
            seen[r * w + c] = true;
            let (mut stack, mut area, mut mass, mut bbox) = (vec![(r, c)], 0, 0.0, [r, r, c, c]);
            while let Some((y, x)) = stack.pop() {
                area += 1;
                mass += light(y, x, floor_level);
                bbox = [bbox[0].min(y), bbox[1].max(y), bbox[2].min(x), bbox[3].max(x)];
                for (ny, nx) in neighbours(y, x, h, w) {
                    if !seen[ny * w + nx] && light(ny, nx, seed_level) > 0.0 {
                        seen[ny * w + nx] = true;
                        stack.push((ny, nx));
                    }
                }
            }
            if area <= max_area && best.is_none_or(|(m, _)| mass > m) {
                best = Some((mass, bbox));
            }
        }
    }
    let (_, [r0, r1, c0, c1]) = best?;
    let (mut sum, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for y in r0.saturating_sub(1)..=(r1 + 1).min(h - 1) {
        for x in c0.saturating_sub(1)..=(c1 + 1).min(w - 1) {
            let l = light(y, x, floor_level);
            (sum, sx, sy) = (sum + l, sx + l * x as f64, sy + l * y as f64);
        }
    }
    Some([sx / sum, sy / sum])
}

/// Pixel columns between the side walls.
fn between_walls(pixels: &Pixels) -> std::ops::Range<usize> {
    pixels.cols(0, SIDE_WALL).end..pixels.cols(LOGICAL_SIZE - SIDE_WALL, LOGICAL_SIZE).start
}

/// The up to eight neighbours of pixel (`y`, `x`) in an `h × w` frame.
fn neighbours(y: usize, x: usize, h: usize, w: usize) -> impl Iterator<Item = (usize, usize)> {
    (-1i64..=1).flat_map(move |dy| (-1i64..=1).map(move |dx| (y as i64 + dy, x as i64 + dx))).filter_map(
        move |(ny, nx)| {
            let inside = (0..h as i64).contains(&ny) && (0..w as i64).contains(&nx);
            (inside && (ny, nx) != (y as i64, x as i64)).then_some((ny as usize, nx as usize))
        },
    )
}

fn find_paddle(pixels: &Pixels) -> Option<f64> {
    let rows = pixels.rows(PADDLE_Y, PADDLE_Y + PADDLE_H);
    // Per column: mean share of paddle colour over the rows the ball leaves uncovered, or
    // `None` where the ball covers every row. Side-wall columns count only where mostly
    // paddle colour (at small sizes the paddle can take a wall's pixel).
    let field = between_walls(pixels);
    let share: Vec<Option<f64>> = (0..pixels.width)
        .map(|c| {
            let unmixed = rows.clone().map(|r| unmix(pixels.at(r, c), BACKGROUND, PADDLE_COLOR, BALL_COLOR));
            let visible: Vec<f64> =
                unmixed.filter(|&(_, ball)| ball <= 0.5).map(|(paddle, _)| paddle).collect();
            let mean = (!visible.is_empty()).then(|| visible.iter().sum::<f64>() / visible.len() as f64);
            mean.map(|m| if field.contains(&c) || m > 0.5 { m } else { 0.0 })
        })
        .collect();
    let (peak_col, peak) =
        share.iter().enumerate().filter_map(|(c, s)| s.map(|s| (c, s))).max_by(|a, b| a.1.total_cmp(&b.1))?;
    if peak < MIN_PADDLE_SHARE {
        return None;
    }
    let level = peak / 2.0;
    let in_run = |c: usize| share[c].is_none_or(|s| s >= level);
    let (mut left, mut right) = (peak_col, peak_col);
    while left > 0 && in_run(left - 1) {
        left -= 1;
    }
    while right + 1 < pixels.width && in_run(right + 1) {
        right += 1;
    }
    // Sub-pixel half-level crossing between column `end` and its neighbour `outer` (below the
    // level; off the frame counts as no paddle); `None` where `end` or `outer` is covered.
    let crossing = |end: usize, outer: i64| -> Option<f64> {
        let outside =
            usize::try_from(outer).ok().filter(|&o| o < share.len()).map_or(Some(0.0), |o| share[o])?;
        let inside = share[end]?;
        let t = (inside - level) / (inside - outside);
        Some(end as f64 + t * (outer - end as i64) as f64)
    };
    let (left_edge, right_edge) = (crossing(left, left as i64 - 1), crossing(right, right as i64 + 1));
    let width = PADDLE_W as f64 * pixels.width as f64 / LOGICAL_SIZE as f64;
    Some(match (left_edge, right_edge) {
        (Some(l), Some(r)) => (l + r) / 2.0,
        (Some(l), None) => l + width / 2.0,
        (None, Some(r)) => r - width / 2.0,
        (None, None) => (left + right) as f64 / 2.0,
    })
}
