//! Maze: a seeded maze of 25×25 tiles seen through an 8×8-tile window centred on the agent,
//! with coins to collect.
//!
//! Actions `noop/up/down/left/right`. A move into a wall leaves the agent in place but still
//! turns it to face that way (its eye shows the facing), so every action has a visible
//! effect. Walking onto a coin collects it (reward 1) and it disappears. The episode ends
//! when every coin is collected or after [`STEP_LIMIT`] steps.
//!
//! The maze is a randomised depth-first-search maze with most walls then knocked out, so it
//! is an open gridworld of wall segments with loops and rooms (a perfect maze would leave a
//! random agent bumping into walls most of the time); the floor is checkered so scrolling is
//! visible everywhere.

use super::raster::{Canvas, Rgb, LOGICAL_SIZE};
use super::{bad_action, Env, StepOutcome};
use crate::episode::FrameShape;
use crate::error::Result;
use crate::rng::rng_for;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Action names, indexed by action.
pub const ACTIONS: &[&str] = &["noop", "up", "down", "left", "right"];

/// Maze cells per side; the tile grid has walls between and around them.
const CELLS: usize = 12;
/// Tiles per side of the maze.
pub const MAZE_TILES: usize = 2 * CELLS + 1;
/// Tiles per side of the view.
pub(crate) const VIEW_TILES: i32 = 8;
/// Logical units per tile.
pub(crate) const TILE: i32 = LOGICAL_SIZE / VIEW_TILES;
/// The agent's row and column within the view.
pub(crate) const AGENT_IN_VIEW: i32 = VIEW_TILES / 2;
/// Chance that a wall between two cells left by the maze generator is knocked out.
const OPENING_PROB: f64 = 0.7;
/// Chance that a floor tile holds a coin.
const COIN_PROB: f64 = 0.12;
/// Steps after which an episode ends.
pub const STEP_LIMIT: u32 = 1000;

pub(crate) const VOID: Rgb = [0, 0, 0];
pub(crate) const FLOOR: [Rgb; 2] = [[30, 30, 42], [44, 44, 60]];
pub(crate) const WALL: Rgb = [60, 85, 175];
pub(crate) const WALL_TOP: Rgb = [120, 145, 230];
pub(crate) const COIN: Rgb = [245, 200, 40];
pub(crate) const COIN_SHINE: Rgb = [255, 245, 170];
pub(crate) const AGENT: Rgb = [80, 225, 110];
pub(crate) const EYE: Rgb = [15, 15, 15];
/// Every colour a frame is drawn with.
pub(crate) const PALETTE: [Rgb; 9] = [VOID, FLOOR[0], FLOOR[1], WALL, WALL_TOP, COIN, COIN_SHINE, AGENT, EYE];

/// Contents of one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tile {
    Wall,
    Floor,
    Coin,
}

/// A direction the agent can face or move in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Up,
    Down,
    Left,
    Right,
}

impl Dir {
    fn delta(self) -> (i32, i32) {
        match self {
            Dir::Up => (0, -1),
            Dir::Down => (0, 1),
            Dir::Left => (-1, 0),
            Dir::Right => (1, 0),
        }
    }
}

/// The maze game. `Clone` copies the full state.
#[derive(Clone)]
pub struct Maze {
    shape: FrameShape,
    /// `[MAZE_TILES, MAZE_TILES]`, row-major.
    tiles: Vec<Tile>,
    /// Agent's (column, row) in tiles.
    agent: (i32, i32),
    facing: Dir,
    coins_left: usize,
    steps: u32,
    done: bool,
}

impl Maze {
    /// A maze rendering frames of `shape` (checked by [`super::make_env`]), reset with seed 0.
    pub fn new(shape: FrameShape) -> Self {
        let mut maze = Maze {
            shape,
            tiles: Vec::new(),
            agent: (0, 0),
            facing: Dir::Down,
            coins_left: 0,
            steps: 0,
            done: false,
        };
        maze.reset(0);
        maze
    }

    /// Agent's (column, row) in maze tiles.
    pub fn agent(&self) -> (i32, i32) {
        self.agent
    }

    /// Coins not yet collected.
    pub fn coins_left(&self) -> usize {
        self.coins_left
    }

    /// True when tile (column `x`, row `y`) is a wall; everything outside the maze is.
    pub fn is_wall(&self, x: i32, y: i32) -> bool {
        self.tile(x, y).is_none_or(|t| t == Tile::Wall)
    }

    /// True when tile (column `x`, row `y`) holds a coin.
    pub fn has_coin(&self, x: i32, y: i32) -> bool {
        self.tile(x, y) == Some(Tile::Coin)
    }

    /// Maze tile (column, row) shown at view tile (`vx`, `vy`), each in `0..VIEW_TILES` (8).
    pub fn view_tile(&self, vx: i32, vy: i32) -> (i32, i32) {
        (self.agent.0 - AGENT_IN_VIEW + vx, self.agent.1 - AGENT_IN_VIEW + vy)
    }

    /// Coins on the tiles the view shows.
    pub fn coins_in_view(&self) -> usize {
        let tiles = (0..VIEW_TILES).flat_map(|vy| (0..VIEW_TILES).map(move |vx| (vx, vy)));
        tiles
            .filter(|&(vx, vy)| {
                let (x, y) = self.view_tile(vx, vy);
                self.has_coin(x, y)
            })
            .count()
    }

    fn tile(&self, x: i32, y: i32) -> Option<Tile> {
        let n = MAZE_TILES as i32;
        ((0..n).contains(&x) && (0..n).contains(&y)).then(|| self.tiles[(y * n + x) as usize])
    }
}

/// Walls and floor `[MAZE_TILES, MAZE_TILES]`: a depth-first-search maze grown from cell
/// `start` (cell (cx, cy) is tile (2cx+1, 2cy+1)), then opened up: each remaining wall between
/// two cells is knocked out with probability [`OPENING_PROB`], and pillars left with floor on
/// all four sides are removed.
fn generate_layout(start: (usize, usize), rng: &mut ChaCha8Rng) -> Vec<Tile> {
    let n = MAZE_TILES;
    let mut tiles = vec![Tile::Wall; n * n];
    let mut visited = [[false; CELLS]; CELLS];
    visited[start.1][start.0] = true;
    tiles[(2 * start.1 + 1) * n + 2 * start.0 + 1] = Tile::Floor;
    let mut stack = vec![start];
    while let Some(&(cx, cy)) = stack.last() {
        let mut options = Vec::with_capacity(4);
        if cx > 0 && !visited[cy][cx - 1] {
            options.push((cx - 1, cy));
        }
        if cx + 1 < CELLS && !visited[cy][cx + 1] {
            options.push((cx + 1, cy));
        }
        if cy > 0 && !visited[cy - 1][cx] {
            options.push((cx, cy - 1));
        }
        if cy + 1 < CELLS && !visited[cy + 1][cx] {
            options.push((cx, cy + 1));
        }
        let Some(&(nx, ny)) = options.choose(rng) else {
            stack.pop();
            continue;
        };
        visited[ny][nx] = true;
        tiles[(cy + ny + 1) * n + cx + nx + 1] = Tile::Floor; // the wall between the two cells
        tiles[(2 * ny + 1) * n + 2 * nx + 1] = Tile::Floor;
        stack.push((nx, ny));
    }
    // Walls between two cells have one odd and one even coordinate.
    for y in 1..n - 1 {
        for x in 1..n - 1 {
            if (x + y) % 2 == 1 && tiles[y * n + x] == Tile::Wall && rng.random_bool(OPENING_PROB) {
                tiles[y * n + x] = Tile::Floor;
            }
        }
    }
    // Pillars (both coordinates even) standing alone.
    for y in (2..n - 1).step_by(2) {
        for x in (2..n - 1).step_by(2) {
            let around = [(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)];
            if around.iter().all(|&(ax, ay)| tiles[ay * n + ax] == Tile::Floor) {
                tiles[y * n + x] = Tile::Floor;
            }
        }
    }
    tiles
}

impl Env for Maze {
    fn name(&self) -> &'static str {
        "maze"
    }

    fn num_actions(&self) -> usize {
        ACTIONS.len()
    }

    fn action_names(&self) -> &'static [&'static str] {
        ACTIONS
    }

    fn reset(&mut self, seed: u64) {
        let mut rng = rng_for(seed, "env/maze", 0);
        let start = (rng.random_range(0..CELLS), rng.random_range(0..CELLS));
        self.tiles = generate_layout(start, &mut rng);
        self.agent = ((2 * start.0 + 1) as i32, (2 * start.1 + 1) as i32);
        let agent_index = self.agent.1 as usize * MAZE_TILES + self.agent.0 as usize;
        self.coins_left = 0;
        for (i, tile) in self.tiles.iter_mut().enumerate() {
            if *tile == Tile::Floor && i != agent_index && rng.random_bool(COIN_PROB) {
                *tile = Tile::Coin;
                self.coins_left += 1;
            }
        }
        self.facing = Dir::Down;
        self.steps = 0;
        self.done = self.coins_left == 0;
    }

    fn step(&mut self, action: usize) -> Result<StepOutcome> {
        let dir = match action {
            0 => None,
            1 => Some(Dir::Up),
            2 => Some(Dir::Down),
            3 => Some(Dir::Left),
            4 => Some(Dir::Right),
            _ => return Err(bad_action(self.name(), action, ACTIONS)),
        };
        if self.done {
            return Ok(StepOutcome { reward: 0.0, done: true });
        }
        let mut reward = 0.0;
        if let Some(dir) = dir {
            self.facing = dir;
            let (dx, dy) = dir.delta();
            let (x, y) = (self.agent.0 + dx, self.agent.1 + dy);
            if !self.is_wall(x, y) {
                self.agent = (x, y);
                if self.has_coin(x, y) {
                    self.tiles[(y * MAZE_TILES as i32 + x) as usize] = Tile::Floor;
                    self.coins_left -= 1;
                    reward = 1.0;
                }
            }
        }
        self.steps += 1;
        self.done = self.coins_left == 0 || self.steps >= STEP_LIMIT;
        Ok(StepOutcome { reward, done: self.done })
    }

    fn render(&self, frame: &mut [u8]) {
        let mut canvas = Canvas::new(frame, self.shape);
        canvas.clear(VOID);
        for vy in 0..VIEW_TILES {
            for vx in 0..VIEW_TILES {
                let (x, y) = self.view_tile(vx, vy);
                let (l, t) = (vx * TILE, vy * TILE);
                match self.tile(x, y) {
                    None => {}
                    Some(Tile::Wall) => {
                        canvas.fill_rect(l, t, l + TILE, t + TILE, WALL);
                        canvas.fill_rect(l, t, l + TILE, t + 2, WALL_TOP);
                    }
                    Some(tile) => {
                        canvas.fill_rect(l, t, l + TILE, t + TILE, FLOOR[((x + y) % 2) as usize]);
                        if tile == Tile::Coin {
                            canvas.fill_rect(l + 2, t + 1, l + 6, t + 7, COIN);
                            canvas.fill_rect(l + 1, t + 2, l + 7, t + 6, COIN);
                            canvas.fill_rect(l + 3, t + 2, l + 4, t + 4, COIN_SHINE);
                        }
                    }
                }
            }
        }
        // The agent: a square body with an eye on the side it faces.
        let (l, t) = (AGENT_IN_VIEW * TILE, AGENT_IN_VIEW * TILE);
        canvas.fill_rect(l + 1, t + 1, l + 7, t + 7, AGENT);
        let (ex, ey) = match self.facing {
            Dir::Up => (3, 1),
            Dir::Down => (3, 5),
            Dir::Left => (1, 3),
            Dir::Right => (5, 3),
        };
        canvas.fill_rect(l + ex, t + ey, l + ex + 2, t + ey + 2, EYE);
    }

    fn frame_shape(&self) -> FrameShape {
        self.shape
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    const SHAPE: FrameShape = FrameShape { height: 64, width: 64, channels: 3 };
    const MOVES: [(usize, (i32, i32)); 4] = [(1, (0, -1)), (2, (0, 1)), (3, (-1, 0)), (4, (1, 0))];

    fn frame(maze: &Maze) -> Vec<u8> {
        let mut f = vec![0u8; SHAPE.frame_bytes()];
        maze.render(&mut f);
        f
    }

    fn pixel(f: &[u8], r: i32, c: i32) -> &[u8] {
        &f[((r * 64 + c) * 3) as usize..][..3]
    }

    #[test]
    fn walls_block_moves_but_turn_the_agent_and_open_moves_scroll_the_view() {
        let (mut blocked_seen, mut moves_seen) = (0, 0);
        for seed in 0..10 {
            let mut start = Maze::new(SHAPE);
            start.reset(seed);
            let before = frame(&start);
            for (action, (dx, dy)) in MOVES {
                let mut m = start.clone();
                m.step(action).unwrap();
                let after = frame(&m);
                let (ax, ay) = start.agent;
                if start.is_wall(ax + dx, ay + dy) {
                    blocked_seen += 1;
                    assert_eq!(m.agent, start.agent, "seed {seed}: walked into a wall");
                    // Only the agent's tile may change (its eye turns).
                    let agent_tile = (AGENT_IN_VIEW * TILE)..((AGENT_IN_VIEW + 1) * TILE);
                    for r in 0..64 {
                        for c in 0..64 {
                            if !(agent_tile.contains(&r) && agent_tile.contains(&c)) {
                                assert_eq!(pixel(&after, r, c), pixel(&before, r, c));
                            }
                        }
                    }
                    if action != 2 {
                        assert_ne!(after, before, "seed {seed}: turning {action} is visible");
                    }
                } else {
                    moves_seen += 1;
                    assert_eq!(m.agent, (ax + dx, ay + dy));
                    // The world scrolls one tile against the move: every pixel away from the
                    // agent's old and new tiles shows what the old frame had one tile over.
                    for r in 0..64 {
                        for c in 0..64 {
                            let (or, oc) = (r + dy * TILE, c + dx * TILE);
                            let tile = |p: i32| p / TILE;
                            let near_agent = [(0, 0), (-dx, -dy)].iter().any(|&(ox, oy)| {
                                tile(c) == AGENT_IN_VIEW + ox && tile(r) == AGENT_IN_VIEW + oy
                            });
                            if (0..64).contains(&or) && (0..64).contains(&oc) && !near_agent {
                                assert_eq!(
                                    pixel(&after, r, c),
                                    pixel(&before, or, oc),
                                    "seed {seed} ({r},{c})"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(blocked_seen > 0 && moves_seen > 0, "{blocked_seen} blocked, {moves_seen} moves");
    }

    /// Actions along a shortest path from the agent to the nearest coin (breadth-first).
    fn path_to_nearest_coin(m: &Maze) -> Option<Vec<usize>> {
        let n = MAZE_TILES as i32;
        let mut came_from = vec![None; MAZE_TILES * MAZE_TILES];
        let mut queue = VecDeque::from([m.agent]);
        let index = |(x, y): (i32, i32)| (y * n + x) as usize;
        came_from[index(m.agent)] = Some((m.agent, 0));
        while let Some(p) = queue.pop_front() {
            if m.has_coin(p.0, p.1) {
                let mut actions = vec![];
                let mut at = p;
                while at != m.agent {
                    let (prev, action) = came_from[index(at)].unwrap();
                    actions.push(action);
                    at = prev;
                }
                actions.reverse();
                return Some(actions);
            }
            for (action, (dx, dy)) in MOVES {
                let q = (p.0 + dx, p.1 + dy);
                if !m.is_wall(q.0, q.1) && came_from[index(q)].is_none() {
                    came_from[index(q)] = Some((p, action));
                    queue.push_back(q);
                }
            }
        }
        None
    }

    #[test]
    fn collecting_every_coin_ends_the_episode_with_one_reward_per_coin() {
        for seed in 0..3 {
            let mut m = Maze::new(SHAPE);
            m.reset(seed);
            let coins = m.coins_left();
            assert!(coins > 10, "seed {seed}: {coins} coins");
            let (mut total, mut done) = (0.0, false);
            while let Some(path) = path_to_nearest_coin(&m) {
                assert!(!done);
                for action in path {
                    let out = m.step(action).unwrap();
                    total += out.reward;
                    done = out.done;
                }
            }
            assert!(done && m.coins_left() == 0, "seed {seed}: every coin is reachable");
            assert_eq!(total, coins as f32);
            // Collected coins are gone from the frame.
            assert!(!frame(&m).chunks_exact(3).any(|p| p == COIN));
        }
    }

    #[test]
    fn the_step_limit_ends_an_episode() {
        let mut m = Maze::new(SHAPE);
        m.reset(5);
        for t in 1..=STEP_LIMIT {
            assert_eq!(m.step(0).unwrap().done, t == STEP_LIMIT);
        }
    }
}
