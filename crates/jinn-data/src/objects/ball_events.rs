//! What the breakout ball does between frames, read off the detections of consecutive frames:
//! where it leaves its course, and why (served, bounced off the paddle, a wall or a brick, or
//! lost). A world model's ball error grows from such events: each one is a turn that the
//! frames before it only imply (a serve's direction follows from where the paddle stands, a
//! bounce's from where the ball meets the paddle, a wall or a brick).
//!
//! The game moves the ball by whole logical units (at most 2 a step, 3 while it rides the
//! paddle), so a course is a constant velocity between frames; a change of more than half a
//! logical unit on either axis is an event. A move cut short by a collision part-way through a
//! step shows as a second change on the next frame; reports that tag frames by the first event
//! since a point count it once. Events are read reliably where a logical unit is
//! at least one pixel (frames 64 px or more on each side); smaller frames blur the ball's
//! centre by about as much as the smallest change.

use super::breakout::BreakoutObjects;
use crate::envs::breakout::{BALL, BALL_VY, BRICKS_Y, BRICK_H, BRICK_ROWS, PADDLE_Y, SIDE_WALL};
use crate::envs::raster::LOGICAL_SIZE;
use crate::episode::FrameShape;
use serde::Serialize;

/// Why the ball left its course on arriving at a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BallEvent {
    /// Launched from resting on the paddle (`fire`), towards the middle of the field.
    Serve,
    /// Bounced off the paddle (its angle set by where on the paddle it lands).
    PaddleBounce,
    /// Bounced off a wall (sides or top).
    WallBounce,
    /// Broke a brick (the frame shows one brick fewer) and bounced.
    BrickHit,
    /// Fell past the paddle: it vanishes, or comes back resting on the paddle.
    Lost,
}

/// Every [`BallEvent`], in the order reports list them.
pub const BALL_EVENTS: [BallEvent; 5] =
    [BallEvent::Serve, BallEvent::PaddleBounce, BallEvent::WallBounce, BallEvent::BrickHit, BallEvent::Lost];

impl BallEvent {
    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            BallEvent::Serve => "serve",
            BallEvent::PaddleBounce => "paddle bounce",
            BallEvent::WallBounce => "wall bounce",
            BallEvent::BrickHit => "brick hit",
            BallEvent::Lost => "lost",
        }
    }
}

/// For each frame `t` of a clip's detections (`track`, consecutive frames of `shape`), the
/// event by which the ball reached frame `t` from frame `t − 1`; `None` where it kept its course
/// (moved as between the two frames before, or rode the paddle), where no ball is seen, and
/// at frame 0.
pub fn ball_events(track: &[BreakoutObjects], shape: FrameShape) -> Vec<Option<BallEvent>> {
    let reading = Reading::new(shape);
    (0..track.len()).map(|t| reading.event(track, t)).collect()
}

/// Whether the ball of a frame of `shape` sits at the height of a ball resting on the paddle
/// (resting, riding it, or touching it in a bounce).
pub fn ball_at_rest_height(objects: &BreakoutObjects, shape: FrameShape) -> bool {
    objects.ball.is_some_and(|c| Reading::new(shape).resting(c))
}

/// For each frame of a track (consecutive frames of `shape`), whether it shows a ball the game
/// could draw there after the frame before: one that moved no farther than the ball moves in a
/// step, or one put back resting on the paddle's middle (the game's only way to make a ball
/// appear; the paddle's centre is read to within a unit and a half).
/// A frame without a ball is `false`; frame 0 is `true` when it shows one. A world that keeps
/// its ball by teleporting it, or lets a lost ball reappear in the open, fails here where
/// "a ball is present" passes.
pub fn ball_moves_as_in_the_game(track: &[BreakoutObjects], shape: FrameShape) -> Vec<bool> {
    let reading = Reading::new(shape);
    let put_back = |o: &BreakoutObjects, c: [f64; 2]| {
        reading.resting(c) && o.paddle_x.is_some_and(|x| (c[0] - x).abs() <= 1.5 * reading.unit[0])
    };
    (0..track.len())
        .map(|t| match (t.checked_sub(1).map(|s| track[s].ball), track[t].ball) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(None), Some(b)) => put_back(&track[t], b),
            (Some(Some(a)), Some(b)) => !reading.jump(Reading::velocity(a, b)) || put_back(&track[t], b),
        })
        .collect()
}

/// Logical units in pixels, and the centre row of a ball resting on the paddle.
struct Reading {
    unit: [f64; 2],
    rest_y: f64,
}

impl Reading {
    fn new(shape: FrameShape) -> Reading {
        let unit = [shape.width as f64 / LOGICAL_SIZE as f64, shape.height as f64 / LOGICAL_SIZE as f64];
        // Pixel row r is at y = r, so a shape's centre sits half a pixel above its logical centre.
        let rest_y = (PADDLE_Y as f64 - BALL as f64 / 2.0) * unit[1] - 0.5;
        Reading { unit, rest_y }
    }

    /// Velocity (px per frame) from `a` to `b`.
    fn velocity(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
        [b[0] - a[0], b[1] - a[1]]
    }

    /// Whether `v` is within half a logical unit of `w` on both axes.
    fn same(&self, v: [f64; 2], w: [f64; 2]) -> bool {
        (0..2).all(|i| (v[i] - w[i]).abs() <= self.unit[i] / 2.0)
    }

    /// Whether a vertical velocity is zero (within half a unit).
    fn still(&self, vy: f64) -> bool {
        vy.abs() <= self.unit[1] / 2.0
    }

    /// Whether a ball centred at `c` sits at the height of a ball resting on the paddle.
    fn resting(&self, c: [f64; 2]) -> bool {
        (c[1] - self.rest_y).abs() <= self.unit[1] / 2.0
    }

    /// Whether `v` is farther than the ball ever moves in a step (3 units riding the paddle,
    /// 2 in flight): the ball was put back on the paddle.
    fn jump(&self, v: [f64; 2]) -> bool {
        v[0].abs() > 3.5 * self.unit[0] || v[1].abs() > 2.5 * self.unit[1]
    }

    fn event(&self, track: &[BreakoutObjects], t: usize) -> Option<BallEvent> {
        let ball = |i: usize| track[i].ball;
        if t == 0 {
            return None;
        }
        let (a, b) = match (ball(t - 1), ball(t)) {
            (Some(_), None) => return Some(BallEvent::Lost),
            (None, _) => return None,
            (Some(a), Some(b)) => (a, b),
        };
        let v2 = Self::velocity(a, b);
        if self.jump(v2) {
            return Some(BallEvent::Lost);
        }
        if b[1] > self.rest_y + self.unit[1] {
            // Below the paddle, falling out of the frame (its centre, of the part still in
            // the frame, moves less than the ball): lost once it is put back.
            return None;
        }
        // The course the ball came in on; unknown after a frame without it or a jump.
        let v1 =
            (t >= 2).then(|| ball(t - 2)).flatten().map(|p| Self::velocity(p, a)).filter(|v| !self.jump(*v));
        let Some(v1) = v1 else {
            // A ball just put back on the paddle that leaves it upwards is served.
            return (self.resting(a) && v2[1] < -self.unit[1] / 2.0).then_some(BallEvent::Serve);
        };
        if self.same(v1, v2) {
            return None;
        }
        if v1[1] > 0.0 && (self.resting(a) || self.resting(b)) {
            // Came down onto the paddle: stops there this frame, or turns there part-way.
            return Some(BallEvent::PaddleBounce);
        }
        if self.resting(a) {
            if self.still(v1[1]) && self.still(v2[1]) {
                return None; // rides the paddle, moving with it
            }
            if self.still(v1[1]) && v2[1] < 0.0 {
                // Leaves the paddle from standing: served, unless it had come down onto the
                // paddle the frame before (a bounce that pauses one frame on the paddle).
                let came_down = t >= 3
                    && matches!((ball(t - 3), ball(t - 2)), (Some(q), Some(p)) if p[1] - q[1] > self.unit[1] / 2.0);
                return Some(if came_down { BallEvent::PaddleBounce } else { BallEvent::Serve });
            }
        }
        Some(if track[t].bricks < track[t - 1].bricks { BallEvent::BrickHit } else { BallEvent::WallBounce })
    }
}

/// Where the ball was last seen before it vanished (see [`first_vanishing`]): the places where
/// the game makes it bounce, break a brick or be put back, and the open field between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VanishPlace {
    /// Below the paddle's top edge, falling out of the frame: the game would put it back on
    /// the paddle.
    BelowPaddle,
    /// Within two steps of landing on the paddle (its row, above the paddle's top edge).
    AtPaddle,
    /// Within two steps of the lowest brick row's bottom edge, or among the bricks.
    AtBricks,
    /// Within two steps of a side wall.
    AtSideWall,
    /// In the open field between them.
    Open,
}

/// Every [`VanishPlace`], in the order reports list them.
pub const VANISH_PLACES: [VanishPlace; 5] = [
    VanishPlace::AtBricks,
    VanishPlace::AtPaddle,
    VanishPlace::BelowPaddle,
    VanishPlace::AtSideWall,
    VanishPlace::Open,
];

impl VanishPlace {
    /// A short label for reports.
    pub fn label(self) -> &'static str {
        match self {
            VanishPlace::BelowPaddle => "below the paddle",
            VanishPlace::AtPaddle => "at the paddle",
            VanishPlace::AtBricks => "at the bricks",
            VanishPlace::AtSideWall => "at a side wall",
            VanishPlace::Open => "in the open",
        }
    }

    /// The place of a ball centred at `c` (logical units, the canvas being `LOGICAL_SIZE`
    /// units square).
    pub fn of_logical_centre(c: [f64; 2]) -> VanishPlace {
        // Within two steps of the ball's fastest flight: at most 4 units between the ball's
        // edge and the obstacle. The game's ball centres sit at half units, so each bound lies
        // half a unit from the nearest centre on either side and a detector's sub-unit error
        // does not move a ball across it.
        let reach = (2 * BALL_VY) as f64 + BALL as f64 / 2.0 + 0.5;
        let bricks_bottom = (BRICKS_Y + BRICK_ROWS as i32 * BRICK_H) as f64;
        let (x, y) = (c[0], c[1]);
        if y > PADDLE_Y as f64 {
            VanishPlace::BelowPaddle
        } else if y >= PADDLE_Y as f64 - reach {
            VanishPlace::AtPaddle
        } else if y <= bricks_bottom + reach {
            VanishPlace::AtBricks
        } else if x <= SIDE_WALL as f64 + reach || x >= (LOGICAL_SIZE - SIDE_WALL) as f64 - reach {
            VanishPlace::AtSideWall
        } else {
            VanishPlace::Open
        }
    }
}

/// The first frame of a track at which a ball seen the frame before is gone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BallVanishing {
    /// Index of the first frame without the ball.
    pub frame: usize,
    /// Where it was last seen.
    pub place: VanishPlace,
    /// Whether a ball is seen again in a later frame of the track.
    pub returned: bool,
}

/// The first frame `t ≥ from` of `track` (consecutive frames of `shape`) where the ball of
/// frame `t − 1` is gone, and where it was last seen; `None` when the ball never vanishes
/// there. (The game itself never shows a frame without its ball: one that falls out is put
/// back on the paddle at once.)
pub fn first_vanishing(track: &[BreakoutObjects], shape: FrameShape, from: usize) -> Option<BallVanishing> {
    let frame =
        (from.max(1)..track.len()).find(|&t| track[t - 1].ball.is_some() && track[t].ball.is_none())?;
    let last = track[frame - 1].ball.expect("seen the frame before");
    // Pixel (column, row) k covers logical [k, k + 1) / unit: its centre is at (k + 0.5) / unit.
    let unit = [shape.width as f64 / LOGICAL_SIZE as f64, shape.height as f64 / LOGICAL_SIZE as f64];
    let centre = [(last[0] + 0.5) / unit[0], (last[1] + 0.5) / unit[1]];
    let returned = track[frame + 1..].iter().any(|o| o.ball.is_some());
    Some(BallVanishing { frame, place: VanishPlace::of_logical_centre(centre), returned })
}
