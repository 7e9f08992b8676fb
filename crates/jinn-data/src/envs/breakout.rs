//! Breakout: a paddle, a ball, six rows of coloured bricks and three walls.
//!
//! Actions `noop/left/right/fire`. The ball starts each life resting on the paddle and moves
//! with it until `fire` launches it towards the middle of the field (steeper from near a side
//! wall). A ball that falls past the paddle costs a life (shown as white marks in the top wall);
//! the episode ends when no life is left or every brick is cleared. Each brick is worth a reward
//! of 1.
//!
//! Positions are integers on the 64×64 logical canvas and the ball moves one unit at a time,
//! so collisions are exact and the game is bit-for-bit deterministic. Only the paddle's start
//! is drawn at random (at reset): after that every frame follows from the frame before, the
//! ball's velocity (two frames) and the action, so a world model can in principle predict the
//! whole game.

use super::raster::{Canvas, Rgb, LOGICAL_SIZE};
use super::{bad_action, Env, StepOutcome};
use crate::episode::FrameShape;
use crate::error::Result;
use crate::rng::rng_for;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Action names, indexed by action.
pub const ACTIONS: &[&str] = &["noop", "left", "right", "fire"];
const NOOP: usize = 0;
const LEFT: usize = 1;
const RIGHT: usize = 2;
const FIRE: usize = 3;

/// Lives at the start of an episode.
pub const LIVES: u32 = 5;

// Layout in logical units (the canvas is 64×64).
pub(crate) const SIDE_WALL: i32 = 2;
pub(crate) const TOP_WALL: i32 = 4;
pub(crate) const BRICK_ROWS: usize = 6;
pub(crate) const BRICK_COLS: usize = 10;
pub(crate) const BRICK_W: i32 = 6; // BRICK_COLS · BRICK_W = 64 − 2 · SIDE_WALL
pub(crate) const BRICK_H: i32 = 3;
pub(crate) const BRICKS_Y: i32 = 10;
pub(crate) const PADDLE_W: i32 = 10;
pub(crate) const PADDLE_H: i32 = 2;
pub(crate) const PADDLE_Y: i32 = 57;
pub(crate) const PADDLE_SPEED: i32 = 3;
pub(crate) const BALL: i32 = 3;
pub(crate) const BALL_VY: i32 = 2;

pub(crate) const BACKGROUND: Rgb = [8, 8, 20];
pub(crate) const WALL_COLOR: Rgb = [110, 110, 124];
pub(crate) const LIFE_COLOR: Rgb = [245, 245, 245];
pub(crate) const PADDLE_COLOR: Rgb = [110, 220, 235];
pub(crate) const BALL_COLOR: Rgb = [255, 255, 255];
pub(crate) const BRICK_COLORS: [Rgb; BRICK_ROWS] =
    [[210, 60, 60], [225, 130, 45], [215, 200, 60], [70, 180, 80], [60, 110, 220], [150, 75, 200]];
/// Every colour a frame is drawn with.
pub(crate) const PALETTE: [Rgb; 11] = {
    let b = BRICK_COLORS;
    [BACKGROUND, WALL_COLOR, LIFE_COLOR, PADDLE_COLOR, BALL_COLOR, b[0], b[1], b[2], b[3], b[4], b[5]]
};

/// The Breakout game. `Clone` copies the full state, random generator included.
#[derive(Clone)]
pub struct Breakout {
    shape: FrameShape,
    rng: ChaCha8Rng,
    bricks: [[bool; BRICK_COLS]; BRICK_ROWS],
    paddle_x: i32,
    /// Ball's top-left corner and velocity.
    ball: (i32, i32),
    velocity: (i32, i32),
    /// True while the ball rests on the paddle, waiting for `fire`.
    attached: bool,
    lives: u32,
    done: bool,
}

impl Breakout {
    /// A game rendering frames of `shape` (checked by [`super::make_env`]), reset with seed 0.
    pub fn new(shape: FrameShape) -> Self {
        let mut game = Breakout {
            shape,
            rng: rng_for(0, "env/breakout", 0),
            bricks: [[true; BRICK_COLS]; BRICK_ROWS],
            paddle_x: 0,
            ball: (0, 0),
            velocity: (0, 0),
            attached: true,
            lives: LIVES,
            done: false,
        };
        game.reset(0);
        game
    }

    /// Paddle's left edge in logical units.
    pub fn paddle_x(&self) -> i32 {
        self.paddle_x
    }

    /// Lives left.
    pub fn lives(&self) -> u32 {
        self.lives
    }

    /// Bricks still standing.
    pub fn bricks_left(&self) -> usize {
        self.bricks.iter().flatten().filter(|&&b| b).count()
    }

    /// True when the brick at `row` (0 at the top), `col` (0 at the left) stands.
    pub fn brick_standing(&self, row: usize, col: usize) -> bool {
        self.bricks.get(row).and_then(|r| r.get(col)).copied().unwrap_or(false)
    }

    /// True while the ball rests on the paddle, waiting for `fire`.
    pub fn ball_resting(&self) -> bool {
        self.attached
    }

    /// Ball's top-left corner in logical units; the ball is 3×3 units.
    pub fn ball(&self) -> (i32, i32) {
        self.ball
    }

    /// Centre (x, y) of the ball's part on the canvas, in logical units; `None` when none of
    /// it is on the canvas (the ball is drawn last, so whatever is on the canvas is visible).
    pub fn ball_centre(&self) -> Option<[f64; 2]> {
        let (x, y) = self.ball;
        let (x0, x1) = (x.max(0), (x + BALL).min(LOGICAL_SIZE));
        let (y0, y1) = (y.max(0), (y + BALL).min(LOGICAL_SIZE));
        (x0 < x1 && y0 < y1).then(|| [(x0 + x1) as f64 / 2.0, (y0 + y1) as f64 / 2.0])
    }

    fn rest_ball_on_paddle(&mut self) {
        self.ball = (self.paddle_x + (PADDLE_W - BALL) / 2, PADDLE_Y - BALL);
    }

    /// True when a ball at `(x, y)` would overlap a wall or a brick; the bricks it overlaps
    /// are removed and counted in `reward`.
    fn collide(&mut self, x: i32, y: i32, reward: &mut f32) -> bool {
        if x < SIDE_WALL || x + BALL > LOGICAL_SIZE - SIDE_WALL || y < TOP_WALL {
            return true;
        }
        let mut hit = false;
        for (r, row) in self.bricks.iter_mut().enumerate() {
            for (c, brick) in row.iter_mut().enumerate() {
                let (bx, by) = brick_origin(r, c);
                if *brick && x < bx + BRICK_W && bx < x + BALL && y < by + BRICK_H && by < y + BALL {
                    *brick = false;
                    *reward += 1.0;
                    hit = true;
                }
            }
        }
        hit
    }

    /// Move the ball by its velocity, one unit at a time: first along x, then along y.
    fn move_ball(&mut self) -> f32 {
        let mut reward = 0.0;
        let (mut x, mut y) = self.ball;
        let dx = self.velocity.0.signum();
        for _ in 0..self.velocity.0.abs() {
            if self.collide(x + dx, y, &mut reward) {
                self.velocity.0 = -self.velocity.0;
                break;
            }
            x += dx;
        }
        let dy = self.velocity.1.signum();
        for _ in 0..self.velocity.1.abs() {
            let ny = y + dy;
            let over_paddle = x < self.paddle_x + PADDLE_W && self.paddle_x < x + BALL;
            if dy > 0 && ny + BALL - 1 == PADDLE_Y && over_paddle {
                self.velocity = (self.paddle_bounce_vx(x), -BALL_VY);
                break;
            }
            if self.collide(x, ny, &mut reward) {
                self.velocity.1 = -self.velocity.1;
                break;
            }
            y = ny;
        }
        self.ball = (x, y);
        reward
    }

    /// Horizontal speed of a serve: towards the canvas's centre, steep from the outer quarters
    /// of the paddle's track, shallow from the middle half. The serve follows from where the
    /// paddle stands (which the frame shows), so every frame of the game follows from the
    /// frames before it and the actions: a world model can, in principle, predict all of it.
    fn serve_vx(&self) -> i32 {
        // Paddle centre minus canvas centre, in half units.
        let offset = 2 * self.paddle_x + PADDLE_W - LOGICAL_SIZE;
        let reach = LOGICAL_SIZE - 2 * SIDE_WALL - PADDLE_W; // the largest |offset|
        let steep = offset.abs() * 2 > reach;
        let speed = if steep { 2 } else { 1 };
        if offset < 0 {
            speed
        } else {
            -speed
        }
    }

    /// Horizontal speed after bouncing off the paddle: steeper towards the paddle's edges.
    fn paddle_bounce_vx(&self, ball_x: i32) -> i32 {
        // Offsets of the ball's centre from the paddle's centre, in half units.
        let offset = (2 * ball_x + BALL) - (2 * self.paddle_x + PADDLE_W);
        match offset {
            o if o < -PADDLE_W / 2 => -2,
            o if o < 0 => -1,
            0 => self.velocity.0.signum(),
            o if o <= PADDLE_W / 2 => 1,
            _ => 2,
        }
    }
}

fn brick_origin(row: usize, col: usize) -> (i32, i32) {
    (SIDE_WALL + col as i32 * BRICK_W, BRICKS_Y + row as i32 * BRICK_H)
}

/// Logical rectangle `(x0, y0, x1, y1)` drawn for the brick at `row`, `col`: one unit of
/// background separates neighbouring bricks.
pub(crate) fn brick_rect(row: usize, col: usize) -> (i32, i32, i32, i32) {
    let (x, y) = brick_origin(row, col);
    (x, y, x + BRICK_W - 1, y + BRICK_H)
}

/// Logical rectangle `(x0, y0, x1, y1)` of the `i`-th lives marker, inside the top wall.
pub(crate) fn life_rect(i: u32) -> (i32, i32, i32, i32) {
    let i = i as i32;
    (4 + 5 * i, 1, 7 + 5 * i, 3)
}

impl Env for Breakout {
    fn name(&self) -> &'static str {
        "breakout"
    }

    fn num_actions(&self) -> usize {
        ACTIONS.len()
    }

    fn action_names(&self) -> &'static [&'static str] {
        ACTIONS
    }

    fn reset(&mut self, seed: u64) {
        self.rng = rng_for(seed, "env/breakout", 0);
        self.bricks = [[true; BRICK_COLS]; BRICK_ROWS];
        self.paddle_x = self.rng.random_range(SIDE_WALL..=LOGICAL_SIZE - SIDE_WALL - PADDLE_W);
        self.velocity = (0, 0);
        self.attached = true;
        self.rest_ball_on_paddle();
        self.lives = LIVES;
        self.done = false;
    }

    fn step(&mut self, action: usize) -> Result<StepOutcome> {
        if action >= ACTIONS.len() {
            return Err(bad_action(self.name(), action, ACTIONS));
        }
        if self.done {
            return Ok(StepOutcome { reward: 0.0, done: true });
        }
        let max_x = LOGICAL_SIZE - SIDE_WALL - PADDLE_W;
        match action {
            LEFT => self.paddle_x = (self.paddle_x - PADDLE_SPEED).max(SIDE_WALL),
            RIGHT => self.paddle_x = (self.paddle_x + PADDLE_SPEED).min(max_x),
            _ => {}
        }
        if self.attached {
            self.rest_ball_on_paddle();
            if action != FIRE {
                return Ok(StepOutcome { reward: 0.0, done: false });
            }
            self.attached = false;
            self.velocity = (self.serve_vx(), -BALL_VY);
        }
        let reward = self.move_ball();
        if self.ball.1 >= LOGICAL_SIZE {
            self.lives -= 1;
            self.attached = true;
            self.rest_ball_on_paddle();
        }
        self.done = self.lives == 0 || self.bricks_left() == 0;
        Ok(StepOutcome { reward, done: self.done })
    }

    fn render(&self, frame: &mut [u8]) {
        let mut canvas = Canvas::new(frame, self.shape);
        canvas.clear(BACKGROUND);
        canvas.fill_rect(0, 0, LOGICAL_SIZE, TOP_WALL, WALL_COLOR);
        canvas.fill_rect(0, 0, SIDE_WALL, LOGICAL_SIZE, WALL_COLOR);
        canvas.fill_rect(LOGICAL_SIZE - SIDE_WALL, 0, LOGICAL_SIZE, LOGICAL_SIZE, WALL_COLOR);
        for i in 0..self.lives {
            let (x0, y0, x1, y1) = life_rect(i);
            canvas.fill_rect(x0, y0, x1, y1, LIFE_COLOR);
        }
        for (r, row) in self.bricks.iter().enumerate() {
            for (c, _) in row.iter().enumerate().filter(|(_, &b)| b) {
                let (x0, y0, x1, y1) = brick_rect(r, c);
                canvas.fill_rect(x0, y0, x1, y1, BRICK_COLORS[r]);
            }
        }
        canvas.fill_rect(
            self.paddle_x,
            PADDLE_Y,
            self.paddle_x + PADDLE_W,
            PADDLE_Y + PADDLE_H,
            PADDLE_COLOR,
        );
        let (x, y) = self.ball;
        canvas.fill_rect(x, y, x + BALL, y + BALL, BALL_COLOR);
    }

    fn frame_shape(&self) -> FrameShape {
        self.shape
    }

    /// Serve a resting ball, then keep the paddle's centre under the ball's: move when they
    /// are more than one paddle step apart, else stand still.
    fn guide_action(&self) -> Option<usize> {
        if self.done {
            return None;
        }
        if self.attached {
            return Some(FIRE);
        }
        // Ball centre minus paddle centre, in half units.
        let offset = (2 * self.ball.0 + BALL) - (2 * self.paddle_x + PADDLE_W);
        Some(match offset {
            o if o > PADDLE_SPEED => RIGHT,
            o if o < -PADDLE_SPEED => LEFT,
            _ => NOOP,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: FrameShape = FrameShape { height: 64, width: 64, channels: 3 };

    fn frame(game: &Breakout) -> Vec<u8> {
        let mut f = vec![0u8; SHAPE.frame_bytes()];
        game.render(&mut f);
        f
    }

    /// Mean column and row of the pixels of `color`, found by scanning the rendered frame.
    fn centroid(frame: &[u8], color: Rgb) -> Option<(f64, f64)> {
        let hits: Vec<(usize, usize)> =
            (0..64 * 64).filter(|&i| frame[i * 3..i * 3 + 3] == color).map(|i| (i % 64, i / 64)).collect();
        let n = hits.len() as f64;
        (!hits.is_empty()).then(|| {
            (
                hits.iter().map(|h| h.0 as f64).sum::<f64>() / n,
                hits.iter().map(|h| h.1 as f64).sum::<f64>() / n,
            )
        })
    }

    #[test]
    fn a_serve_heads_for_the_centre_and_steeper_from_the_outer_quarters() {
        let mut game = Breakout::new(SHAPE);
        for x in SIDE_WALL..=LOGICAL_SIZE - SIDE_WALL - PADDLE_W {
            for seed in 0..2 {
                game.reset(seed);
                game.paddle_x = x;
                game.rest_ball_on_paddle();
                game.step(FIRE).unwrap();
                let from_middle = x as f64 + PADDLE_W as f64 / 2.0 - LOGICAL_SIZE as f64 / 2.0;
                let speed = if from_middle.abs() > 12.5 { 2 } else { 1 };
                let expected = if from_middle < 0.0 { speed } else { -speed };
                assert_eq!(game.velocity, (expected, -BALL_VY), "paddle at {x}, seed {seed}");
            }
        }
    }

    #[test]
    fn the_guide_serves_and_never_misses_the_ball() {
        for seed in 0..4 {
            let mut game = Breakout::new(SHAPE);
            game.reset(seed);
            assert_eq!(game.guide_action(), Some(FIRE), "a resting ball is served");
            for step in 0..3000 {
                let action = game.guide_action().expect("a running game has a guide action");
                if game.step(action).unwrap().done {
                    break;
                }
                assert_eq!(game.lives(), LIVES, "seed {seed}: a life lost at step {step}");
            }
            assert!(
                game.bricks_left() < BRICK_ROWS * BRICK_COLS / 2,
                "seed {seed}: {} bricks left",
                game.bricks_left()
            );
        }
        let mut over = Breakout::new(SHAPE);
        over.done = true;
        assert_eq!(over.guide_action(), None);
    }

    #[test]
    fn left_and_right_move_the_paddle_and_resting_ball_in_opposite_directions() {
        let mut start = Breakout::new(SHAPE);
        start.reset(4);
        start.paddle_x = 27;
        start.rest_ball_on_paddle();
        let (x0, _) = centroid(&frame(&start), PADDLE_COLOR).unwrap();
        let (bx0, by0) = centroid(&frame(&start), BALL_COLOR).unwrap();
        for (action, sign) in [(LEFT, -1.0), (RIGHT, 1.0)] {
            let mut game = start.clone();
            for _ in 0..3 {
                game.step(action).unwrap();
            }
            let f = frame(&game);
            let (x, _) = centroid(&f, PADDLE_COLOR).unwrap();
            assert_eq!(x - x0, sign * 9.0, "paddle moves 3 units per step");
            let (bx, by) = centroid(&f, BALL_COLOR).unwrap();
            assert_eq!((bx - bx0, by - by0), (sign * 9.0, 0.0), "the resting ball rides along");
        }
        // Walls stop the paddle.
        let mut game = start.clone();
        for _ in 0..30 {
            game.step(LEFT).unwrap();
        }
        assert_eq!(game.paddle_x, SIDE_WALL);
        let f = frame(&game);
        assert!((0..64).all(|r| f[r * 64 * 3..][..3] == WALL_COLOR), "left wall intact");
    }

    #[test]
    fn fire_launches_the_ball_upwards_and_noop_keeps_it_resting() {
        let mut start = Breakout::new(SHAPE);
        start.reset(8);
        let (_, y0) = centroid(&frame(&start), BALL_COLOR).unwrap();
        let mut waiting = start.clone();
        for _ in 0..10 {
            waiting.step(0).unwrap();
        }
        assert_eq!(frame(&waiting), frame(&start));
        let mut fired = start.clone();
        fired.step(FIRE).unwrap();
        let mut ys = vec![];
        for _ in 0..5 {
            ys.push(centroid(&frame(&fired), BALL_COLOR).unwrap().1);
            fired.step(0).unwrap();
        }
        assert_eq!(ys, (1..=5).map(|t| y0 - 2.0 * t as f64).collect::<Vec<_>>());
        // Fire while the ball flies changes nothing.
        let (mut a, mut b) = (fired.clone(), fired);
        a.step(FIRE).unwrap();
        b.step(0).unwrap();
        assert_eq!(frame(&a), frame(&b));
    }

    #[test]
    fn rewards_count_broken_bricks_and_lost_balls_cost_lives() {
        let mut game = Breakout::new(SHAPE);
        let mut policy = super::super::policy::StickyRandomPolicy::new(4, 0.7, 1).unwrap();
        game.reset(1);
        let (mut total, mut lives_seen) = (0.0, vec![LIVES]);
        loop {
            let out = game.step(policy.act()).unwrap();
            total += out.reward;
            assert_eq!(total as usize, BRICK_ROWS * BRICK_COLS - game.bricks_left());
            if *lives_seen.last().unwrap() != game.lives {
                lives_seen.push(game.lives);
                assert!(game.attached, "a lost ball is served again from the paddle");
            }
            if out.done {
                break;
            }
        }
        assert_eq!(lives_seen, (0..=LIVES).rev().collect::<Vec<_>>());
        assert!(total > 0.0);
    }

    #[test]
    fn a_paddle_that_tracks_the_ball_clears_every_brick() {
        let mut game = Breakout::new(SHAPE);
        game.reset(2);
        let mut total = 0.0;
        for t in 0..50_000 {
            // Aim at varying spots of the paddle, or the ball can settle into a loop that
            // misses the last bricks.
            let centre = game.paddle_x + PADDLE_W / 2 + (t / 300) % 9 - 4;
            let target = game.ball.0 + BALL / 2 + game.velocity.0;
            let action = if game.attached {
                FIRE
            } else if target < centre - 1 {
                LEFT
            } else if target > centre + 1 {
                RIGHT
            } else {
                0
            };
            let out = game.step(action).unwrap();
            total += out.reward;
            if out.done {
                break;
            }
        }
        assert_eq!(game.bricks_left(), 0, "lives left {}", game.lives);
        assert!(game.done && game.lives == LIVES, "lives {}", game.lives);
        assert_eq!(total, (BRICK_ROWS * BRICK_COLS) as f32);
    }
}
