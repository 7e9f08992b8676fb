//! Built-in environments: small, deterministic games whose frames make good first training
//! data for a world model (clear sprites, plenty of motion, next frame visibly driven by the
//! action).
//!
//! - [`breakout`]: paddle, ball, bricks; actions `noop/left/right/fire`.
//! - [`maze`]: a seeded maze larger than the agent-centred view, with coins; actions
//!   `noop/up/down/left/right`.
//! - [`policy`]: the sticky random policy that drives them during data generation, optionally
//!   mixed with a game's scripted player ([`Env::guide_action`]).
//!
//! Game logic runs on a fixed logical 64×64 canvas ([`raster`]); frames are rendered at any
//! requested size of at least [`MIN_FRAME_SIDE`] pixels per side, square or not (the layout is
//! stretched to the aspect ratio). Everything is a pure function of the seed given to
//! [`Env::reset`] and the actions taken.

pub mod breakout;
pub mod maze;
pub mod policy;
pub mod raster;

use crate::episode::FrameShape;
use crate::error::{DataError, Result};

/// Names accepted by [`make_env`].
pub const ENV_NAMES: &[&str] = &["breakout", "maze"];

/// Smallest frame height or width an environment renders at.
pub const MIN_FRAME_SIDE: usize = 16;

/// Largest frame height or width an environment renders at.
pub const MAX_FRAME_SIDE: usize = 1024;

/// What one step of an environment produced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// Reward earned by the step.
    pub reward: f32,
    /// True when the episode is over; call [`Env::reset`] before stepping again.
    pub done: bool,
}

/// A deterministic game with a discrete action space and RGB frames.
pub trait Env: Send {
    /// Registry name (one of [`ENV_NAMES`]).
    fn name(&self) -> &'static str;

    /// Number of discrete actions; valid actions are `0..num_actions()`.
    fn num_actions(&self) -> usize;

    /// Human-readable action names, indexed by action.
    fn action_names(&self) -> &'static [&'static str];

    /// Start a new episode; everything random in it derives from `seed`.
    fn reset(&mut self, seed: u64);

    /// Apply `action`. An action outside `0..num_actions()` is a [`DataError::Invalid`] and
    /// leaves the state unchanged. Stepping a finished episode changes nothing and reports
    /// `done` again.
    fn step(&mut self, action: usize) -> Result<StepOutcome>;

    /// Draw the current state into `frame`, a `[H, W, 3]` u8 buffer of [`Env::frame_shape`].
    ///
    /// # Panics
    /// If `frame.len()` is not `frame_shape().frame_bytes()`.
    fn render(&self, frame: &mut [u8]);

    /// Shape of the frames [`Env::render`] draws.
    fn frame_shape(&self) -> FrameShape;

    /// The action a simple scripted player takes in the current state, or `None` for a game
    /// without one. Data generation mixes it into the random policy (`--follow-prob`) so that
    /// episodes show more of the game's interactions than random play reaches.
    fn guide_action(&self) -> Option<usize> {
        None
    }
}

/// Build environment `name`, rendering frames of `shape`, reset with `seed`.
pub fn make_env(name: &str, shape: FrameShape, seed: u64) -> Result<Box<dyn Env>> {
    check_frame_shape(shape)?;
    let mut env: Box<dyn Env> = match name {
        "breakout" => Box::new(breakout::Breakout::new(shape)),
        "maze" => Box::new(maze::Maze::new(shape)),
        _ => return Err(unknown_env(name)),
    };
    env.reset(seed);
    Ok(env)
}

/// Error unless `name` is one of [`ENV_NAMES`].
pub fn check_env_name(name: &str) -> Result<()> {
    if ENV_NAMES.contains(&name) {
        Ok(())
    } else {
        Err(unknown_env(name))
    }
}

fn unknown_env(name: &str) -> DataError {
    DataError::invalid(
        "--env",
        format!("unknown environment {name:?}; expected one of: {}", ENV_NAMES.join(", ")),
    )
}

/// Error unless environments can render frames of `shape`: RGB, each side in
/// [`MIN_FRAME_SIDE`]`..=`[`MAX_FRAME_SIDE`].
pub fn check_frame_shape(shape: FrameShape) -> Result<()> {
    for (flag, side) in [("--height", shape.height), ("--width", shape.width)] {
        if !(MIN_FRAME_SIDE..=MAX_FRAME_SIDE).contains(&side) {
            return Err(DataError::invalid(
                flag,
                format!("{side} pixels; environments render frames {MIN_FRAME_SIDE} to {MAX_FRAME_SIDE} pixels per side"),
            ));
        }
    }
    if shape.channels != 3 {
        return Err(DataError::invalid(
            "frame channels",
            format!("{}; environments render RGB frames (3 channels)", shape.channels),
        ));
    }
    Ok(())
}

/// Error for an action outside `0..names.len()`, naming the action and the valid range.
fn bad_action(env: &str, action: usize, names: &[&str]) -> DataError {
    DataError::invalid(
        "action",
        format!(
            "{action} is not a {env} action; expected 0..={} ({})",
            names.len() - 1,
            names.iter().enumerate().map(|(i, n)| format!("{i}={n}")).collect::<Vec<_>>().join(", ")
        ),
    )
}

#[cfg(test)]
mod tests;
