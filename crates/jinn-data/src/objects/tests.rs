//! The detectors against the environments' own state, on real frames played by the sticky
//! random policy at several frame sizes, clean, blurred and noisy.

use super::*;
use crate::envs::breakout::{
    brick_rect, Breakout, BALL, BRICK_COLS, BRICK_ROWS, LIVES, PADDLE_H, PADDLE_W, PADDLE_Y,
};
use crate::envs::maze::Maze;
use crate::envs::policy::{GuidedPolicy, StickyRandomPolicy};
use crate::envs::raster::{Canvas, LOGICAL_SIZE};
use crate::envs::Env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

const SHAPES: [(usize, usize); 5] = [(64, 64), (32, 32), (96, 96), (48, 80), (16, 16)];

fn render(env: &dyn Env) -> Vec<u8> {
    let mut frame = vec![0u8; env.frame_shape().frame_bytes()]; // [H, W, 3] u8
    env.render(&mut frame);
    frame
}

/// 3×3 box blur (the mean over the neighbours inside the frame).
fn blur(frame: &[u8], shape: FrameShape) -> Vec<u8> {
    let (h, w) = (shape.height as i64, shape.width as i64);
    let mut out = vec![0u8; frame.len()];
    for r in 0..h {
        for c in 0..w {
            for k in 0..3 {
                let (mut sum, mut n) = (0u32, 0u32);
                for (y, x) in (r - 1..=r + 1).flat_map(|y| (c - 1..=c + 1).map(move |x| (y, x))) {
                    if (0..h).contains(&y) && (0..w).contains(&x) {
                        sum += frame[((y * w + x) * 3 + k) as usize] as u32;
                        n += 1;
                    }
                }
                out[((r * w + c) * 3 + k) as usize] = ((sum + n / 2) / n) as u8;
            }
        }
    }
    out
}

/// Uniform noise of ±`amplitude` on every channel.
fn noisy(frame: &[u8], amplitude: i32, rng: &mut ChaCha8Rng) -> Vec<u8> {
    frame.iter().map(|&b| (b as i32 + rng.random_range(-amplitude..=amplitude)).clamp(0, 255) as u8).collect()
}

/// How a frame is degraded before detection, and how far detections may then stray (px).
#[derive(Clone, Copy, Debug)]
enum Degrade {
    Clean,
    Blur,
    Noise,
}

/// Centre of the pixels that logical range `[l0, l1)` covers (pixel `p` at `p`).
fn rendered_centre(l0: i32, l1: i32, pixels: usize) -> f64 {
    let span = span(l0, l1, pixels);
    (span.start + span.end - 1) as f64 / 2.0
}

fn to_px(logical: f64, pixels: usize) -> f64 {
    logical * pixels as f64 / LOGICAL_SIZE as f64
}

/// Plays breakout at `shape` for `steps` frames (episodes restart), checking every frame's
/// detections against the game; returns how many frames had the ball in the paddle's rows
/// and the fewest bricks seen.
fn check_breakout(shape: FrameShape, degrade: Degrade, steps: usize) -> (usize, usize) {
    let mut game = Breakout::new(shape);
    let mut policy = guided(11, 0.5);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (mut seed, mut ball_on_paddle_rows, mut fewest_bricks) = (0, 0, usize::MAX);
    game.reset(seed);
    let tolerance = match degrade {
        Degrade::Clean => 0.5 + 1e-9,
        Degrade::Blur | Degrade::Noise => 0.75,
    };
    let (h, w) = (shape.height, shape.width);
    for t in 0..steps {
        let clean = render(&game);
        let frame = match degrade {
            Degrade::Clean => clean,
            Degrade::Blur => blur(&clean, shape),
            Degrade::Noise => noisy(&clean, 20, &mut rng),
        };
        let seen = detect_breakout(&frame, shape).unwrap();
        let at = format!("{h}x{w} {degrade:?} step {t}");
        // Ball: always on the canvas (a lost ball is served again at once).
        let (bx, by) = game.ball();
        let truth = game.ball_centre().unwrap();
        // A ball sinking off the bottom shows a sliver, which the canvas still draws as a
        // pixel row (a pixel off at most) and which blur can fade below white.
        let clipped = by + BALL > LOGICAL_SIZE;
        let ball_rows = span(by, by + BALL, h);
        let Some(ball) = seen.ball else {
            assert!(clipped && !matches!(degrade, Degrade::Clean), "{at}: ball at {:?} not seen", (bx, by));
            continue_game(&mut game, &mut policy, &mut seed);
            continue;
        };
        let expected =
            [rendered_centre(bx, bx + BALL, w), rendered_centre(by.max(0), (by + BALL).min(LOGICAL_SIZE), h)];
        for k in 0..2 {
            let px = to_px(truth[k], [w, h][k]);
            if matches!(degrade, Degrade::Clean) {
                assert!((ball[k] - expected[k]).abs() < 1e-9, "{at}: ball {ball:?}, drawn at {expected:?}");
            }
            // Below 22 px a 3-unit ball still covers one pixel, which can lie a pixel off, and
            // covers a 2.5-pixel paddle's end.
            let tolerance = if k == 1 && clipped { 1.0 } else { tolerance };
            if [w, h][k] >= 22 {
                assert!((ball[k] - px).abs() <= tolerance, "{at}: ball {ball:?}, truth {truth:?} → {px} px");
            }
        }
        let (px0, px1) = (game.paddle_x(), game.paddle_x() + PADDLE_W);
        let paddle = seen.paddle_x.unwrap_or_else(|| panic!("{at}: paddle not seen"));
        let paddle_rows = span(PADDLE_Y, PADDLE_Y + PADDLE_H, h);
        let ball_in_paddle_rows = ball_rows.start < paddle_rows.end && paddle_rows.start < ball_rows.end;
        if matches!(degrade, Degrade::Clean) && !ball_in_paddle_rows {
            assert!((paddle - rendered_centre(px0, px1, w)).abs() < 1e-9, "{at}: paddle {paddle}");
        }
        let truth = to_px((px0 + px1) as f64 / 2.0, w);
        if w >= 22 {
            assert!((paddle - truth).abs() <= tolerance, "{at}: paddle {paddle}, truth {truth}");
        }
        // Below 22 px shapes under a pixel widen to one, so the ball can cover a brick.
        let ball_px = (span(bx, bx + BALL, w), ball_rows.clone());
        let mut hidden = 0;
        for (r, row) in seen.standing.iter().enumerate() {
            for (c, &s) in row.iter().enumerate() {
                let (x0, y0, x1, y1) = brick_rect(r, c);
                let (cols, rows) = (span(x0, x1, w), span(y0, y1, h));
                let overlaps = |a: &Range<usize>, b: &Range<usize>| a.start < b.end && b.start < a.end;
                if overlaps(&cols, &ball_px.0) && overlaps(&rows, &ball_px.1) {
                    hidden += usize::from(game.brick_standing(r, c));
                    continue;
                }
                assert_eq!(s, game.brick_standing(r, c), "{at}: brick ({r}, {c})");
            }
        }
        assert_eq!(seen.bricks + hidden, game.bricks_left(), "{at}");
        ball_on_paddle_rows += usize::from(ball_in_paddle_rows);
        fewest_bricks = fewest_bricks.min(game.bricks_left());
        continue_game(&mut game, &mut policy, &mut seed);
    }
    (ball_on_paddle_rows, fewest_bricks)
}

/// The sticky random policy, with the game's guide (which serves and follows the ball) taking
/// a share `follow_prob` of the steps; at 0.5, the demo data's player, bounces and broken
/// bricks are common.
fn guided(seed: u64, follow_prob: f64) -> GuidedPolicy {
    GuidedPolicy::new(StickyRandomPolicy::new(4, 0.7, seed).unwrap(), follow_prob, seed).unwrap()
}

/// One policy step; a finished episode restarts with the next seed.
fn continue_game(game: &mut Breakout, policy: &mut GuidedPolicy, seed: &mut u64) {
    if game.step(policy.act(game.guide_action())).unwrap().done {
        *seed += 1;
        game.reset(*seed);
    }
}

#[test]
fn breakout_detections_match_the_game_on_real_frames() {
    let (mut on_paddle_rows, mut fewest) = (0, usize::MAX);
    for (h, w) in SHAPES {
        let (o, f) = check_breakout(FrameShape::rgb(h, w), Degrade::Clean, 400);
        (on_paddle_rows, fewest) = (on_paddle_rows + o, fewest.min(f));
    }
    assert!(on_paddle_rows > 0, "some frames have the ball beside or over the paddle");
    assert!(fewest < BRICK_ROWS * BRICK_COLS - 10, "bricks get broken: {fewest} left");
}

#[test]
fn breakout_detections_survive_blur_and_noise() {
    // A 3×3 blur smears one-pixel bricks into their neighbours, so it is tested where a
    // logical unit spans most of a pixel; noise at every size.
    for (h, w) in [(64, 64), (96, 96), (48, 80)] {
        check_breakout(FrameShape::rgb(h, w), Degrade::Blur, 200);
    }
    for (h, w) in SHAPES.into_iter().filter(|&(h, _)| h >= 32) {
        check_breakout(FrameShape::rgb(h, w), Degrade::Noise, 150);
    }
}

#[test]
fn lives_markers_are_never_taken_for_the_ball() {
    for (h, w) in SHAPES {
        let shape = FrameShape::rgb(h, w);
        for seed in 0..8 {
            let mut game = Breakout::new(shape);
            game.reset(seed);
            assert_eq!(game.lives(), LIVES);
            let mut frame = render(&game);
            let (bx, by) = game.ball();
            let resting = detect_breakout(&frame, shape).unwrap().ball.expect("resting ball seen");
            let expected = [rendered_centre(bx, bx + BALL, w), rendered_centre(by, by + BALL, h)];
            assert!((resting[0] - expected[0]).abs() < 1e-9 && (resting[1] - expected[1]).abs() < 1e-9);
            // Paint the ball over: only the lives markers are white-ish now.
            Canvas::new(&mut frame, shape).fill_rect(bx, by, bx + BALL, by + BALL, [8, 8, 20]);
            let mut variants = vec![frame.clone()];
            if h >= 48 {
                variants.push(blur(&frame, shape));
            }
            for f in variants {
                let seen = detect_breakout(&f, shape).unwrap();
                assert_eq!(seen.ball, None, "{h}x{w} seed {seed}: lives taken for a ball");
                assert!(seen.paddle_x.is_some());
                assert_eq!(seen.bricks, BRICK_ROWS * BRICK_COLS);
            }
        }
    }
}

/// Plays the maze at `shape` for `steps` steps, checking coins in view and the view's
/// displacement against the agent's move; returns (moves, bumps into walls) seen.
fn check_maze(shape: FrameShape, degrade: Degrade, steps: usize) -> (usize, usize) {
    let mut maze = Maze::new(shape);
    let mut policy = StickyRandomPolicy::new(5, 0.7, 3).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (mut seed, mut moves, mut bumps) = (0, 0, 0);
    maze.reset(seed);
    let mut degraded = |f: Vec<u8>| match degrade {
        Degrade::Clean => f,
        Degrade::Blur => blur(&f, shape),
        Degrade::Noise => noisy(&f, 20, &mut rng),
    };
    let mut prev = degraded(render(&maze));
    for t in 0..steps {
        let at = format!("{}x{} {degrade:?} step {t}", shape.height, shape.width);
        assert_eq!(detect_maze(&prev, shape).unwrap().coins, maze.coins_in_view(), "{at}");
        let (before, action) = (maze.agent(), policy.act());
        let done = maze.step(action).unwrap().done;
        let next = degraded(render(&maze));
        let moved = [maze.agent().0 - before.0, maze.agent().1 - before.1];
        assert_eq!(maze_displacement(&prev, &next, shape).unwrap(), Some(moved), "{at}: action {action}");
        moves += usize::from(moved != [0, 0]);
        bumps += usize::from(moved == [0, 0] && action != 0);
        prev = next;
        if done {
            seed += 1;
            maze.reset(seed);
            prev = degraded(render(&maze));
        }
    }
    (moves, bumps)
}

#[test]
fn maze_coins_and_displacement_match_the_game_on_real_frames() {
    for (h, w) in SHAPES {
        let (moves, bumps) = check_maze(FrameShape::rgb(h, w), Degrade::Clean, 250);
        assert!(moves > 50 && bumps > 10, "{h}x{w}: {moves} moves, {bumps} bumps");
    }
}

#[test]
fn maze_detections_survive_blur_and_noise() {
    for (h, w) in SHAPES.into_iter().filter(|&(h, _)| h >= 32) {
        check_maze(FrameShape::rgb(h, w), Degrade::Blur, 150);
        check_maze(FrameShape::rgb(h, w), Degrade::Noise, 150);
    }
}

#[test]
fn an_unrelated_frame_has_no_displacement() {
    let shape = FrameShape::rgb(64, 64);
    let mut maze = Maze::new(shape);
    let a = render(&maze);
    maze.reset(1);
    let b = render(&maze);
    assert_eq!(maze_displacement(&a, &b, shape).unwrap(), None);
    assert_eq!(maze_displacement(&a, &a, shape).unwrap(), Some([0, 0]));
}

#[test]
fn blurred_real_frames_are_on_palette_and_random_colours_are_not() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for (h, w) in [(64, 64), (32, 32), (48, 80)] {
        let shape = FrameShape::rgb(h, w);
        for (name, steps) in [("breakout", 100), ("maze", 40)] {
            let game = Game::from_env_name(name).unwrap();
            let mut env = crate::envs::make_env(name, shape, 3).unwrap();
            let mut policy = StickyRandomPolicy::new(env.num_actions(), 0.7, 2).unwrap();
            let mut worst: f64 = 0.0;
            let mut blurred_frames = vec![];
            for _ in 0..steps {
                let frame = blur(&render(env.as_ref()), shape);
                assert_eq!(off_palette_share(&render(env.as_ref()), shape, game, 1e-9).unwrap(), 0.0);
                worst =
                    worst.max(off_palette_share(&frame, shape, game, DEFAULT_OFF_PALETTE_THRESHOLD).unwrap());
                blurred_frames.extend(frame);
                env.step(policy.act()).unwrap();
            }
            assert!(worst < 0.08, "{name} {h}x{w}: blurred frames {worst} off-palette");
            let random: Vec<u8> = (0..shape.frame_bytes()).map(|_| rng.random()).collect();
            let share = off_palette_share(&random, shape, game, DEFAULT_OFF_PALETTE_THRESHOLD).unwrap();
            assert!(share > 0.25, "{name} {h}x{w}: random colours only {share} off-palette");
            // Calibration: at most the requested share of the frames is past the threshold.
            let threshold = calibrate_off_palette_threshold(&blurred_frames, shape, game, 0.01).unwrap();
            let total: f64 = blurred_frames
                .chunks_exact(shape.frame_bytes())
                .map(|f| off_palette_share(f, shape, game, threshold).unwrap())
                .sum();
            assert!(total / steps as f64 <= 0.01 && threshold > 0.0, "{name}: {threshold}");
        }
    }
}

#[test]
fn bad_frames_and_names_are_errors() {
    let shape = FrameShape::rgb(32, 32);
    let frame = vec![0u8; shape.frame_bytes()];
    assert!(detect_breakout(&frame[1..], shape).is_err());
    assert!(detect_maze(&frame, FrameShape { height: 32, width: 32, channels: 1 }).is_err());
    assert!(detect_maze(&frame[..8 * 8 * 3], FrameShape::rgb(8, 8)).is_err());
    assert!(maze_displacement(&frame, &frame[3..], shape).is_err());
    assert!(off_palette_share(&frame, FrameShape::rgb(16, 16), Game::Maze, 10.0).is_err());
    assert!(calibrate_off_palette_threshold(&[], shape, Game::Maze, 0.01).is_err());
    assert!(calibrate_off_palette_threshold(&frame, shape, Game::Maze, 2.0).is_err());
    assert_eq!(Game::from_env_name("breakout"), Some(Game::Breakout));
    assert_eq!(Game::from_env_name("maze"), Some(Game::Maze));
    assert_eq!(Game::from_env_name("pong"), None);
    // A blank frame: nothing to see.
    let seen = detect_breakout(&frame, shape).unwrap();
    assert_eq!((seen.ball, seen.paddle_x, seen.bricks), (None, None, 0));
}

#[test]
fn one_paddle_step_moves_the_detected_paddle_by_the_step_length() {
    for (h, w) in [(64, 64), (48, 80), (32, 32)] {
        let shape = FrameShape { height: h, width: w, channels: 3 };
        let mut game = Breakout::new(shape);
        game.reset(5);
        // From the middle, so that no wall stops the step.
        while detect_breakout(&render(&game), shape).unwrap().paddle_x.unwrap() < w as f64 / 2.0 {
            game.step(2).unwrap();
        }
        let x0 = detect_breakout(&render(&game), shape).unwrap().paddle_x.unwrap();
        game.step(1).unwrap();
        let x1 = detect_breakout(&render(&game), shape).unwrap().paddle_x.unwrap();
        let step = breakout_paddle_step(shape);
        assert!((x0 - x1 - step).abs() <= 0.5, "{h}x{w}: the paddle moved {} px, step {step}", x0 - x1);
    }
}

#[test]
fn the_paddle_range_ends_where_the_walls_stop_the_paddle() {
    for (h, w) in [(64, 64), (48, 80)] {
        let shape = FrameShape { height: h, width: w, channels: 3 };
        let [lo, hi] = breakout_paddle_range(shape);
        for (action, end) in [(1, lo), (2, hi)] {
            let mut game = Breakout::new(shape);
            game.reset(5);
            for _ in 0..30 {
                game.step(action).unwrap();
            }
            let x = detect_breakout(&render(&game), shape).unwrap().paddle_x.unwrap();
            assert!((x - end).abs() <= 0.5, "{h}x{w}, action {action}: paddle at {x}, range end {end}");
        }
    }
}

/// The event the game's own state gives frame `t + 1` after `step`: the ball's logical move
/// changed (or it was put back), and why.
fn game_event(before: &Breakout, after: &Breakout, last_move: Option<(i32, i32)>) -> Option<BallEvent> {
    let (b0, b1) = (before.ball(), after.ball());
    let moved = (b1.0 - b0.0, b1.1 - b0.1);
    if after.lives() < before.lives() {
        return Some(BallEvent::Lost);
    }
    if before.ball_resting() {
        return (!after.ball_resting()).then_some(BallEvent::Serve);
    }
    // Falling below the paddle (partly out of the frame), or on course.
    let paddle_row = PADDLE_Y - BALL;
    if b1.1 > paddle_row || last_move.is_none_or(|m| m == moved) {
        return None;
    }
    Some(if after.bricks_left() < before.bricks_left() {
        BallEvent::BrickHit
    } else if b0.1 == paddle_row || b1.1 == paddle_row {
        BallEvent::PaddleBounce
    } else {
        BallEvent::WallBounce
    })
}

/// Detections of the frames of one breakout episode played for at most `steps` steps by the
/// sticky random policy, with the guide taking a share `follow_prob` of the steps;
/// `each(before, after)` sees the game around every step.
fn play_breakout(
    shape: FrameShape,
    episode: u64,
    (steps, follow_prob): (usize, f64),
    mut each: impl FnMut(&Breakout, &Breakout),
) -> Vec<BreakoutObjects> {
    let mut game = Breakout::new(shape);
    game.reset(episode);
    let mut policy = guided(episode, follow_prob);
    let mut track = vec![detect_breakout(&render(&game), shape).unwrap()];
    for _ in 0..steps {
        let before = game.clone();
        if game.step(policy.act(game.guide_action())).unwrap().done {
            break;
        }
        each(&before, &game);
        track.push(detect_breakout(&render(&game), shape).unwrap());
    }
    track
}

#[test]
fn ball_events_read_off_frames_match_the_game() {
    // Frames where a logical unit is at least a pixel (see `ball_events`).
    for (h, w) in [(64, 64), (96, 96), (128, 128), (64, 128)] {
        let shape = FrameShape { height: h, width: w, channels: 3 };
        let (mut agree, mut frames) = (0usize, 0usize);
        let mut seen = std::collections::HashMap::new();
        for episode in 0..6u64 {
            let mut truth = vec![None];
            let mut last_move = None;
            let track = play_breakout(shape, episode, (600, 0.5), |before, game| {
                truth.push(game_event(before, game, last_move));
                let (b0, b1) = (before.ball(), game.ball());
                last_move = (before.lives() == game.lives()).then_some((b1.0 - b0.0, b1.1 - b0.1));
            });
            let read = ball_events(&track, shape);
            for (t, (r, g)) in read.iter().zip(&truth).enumerate() {
                frames += 1;
                agree += usize::from(r == g);
                if let Some(e) = g {
                    let (hit, all) = seen.entry(*e).or_insert((0usize, 0usize));
                    *all += 1;
                    *hit += usize::from(r == g);
                }
                if r != g {
                    eprintln!("{h}x{w} episode {episode} frame {t}: read {r:?}, game {g:?}");
                }
            }
        }
        // Every kind occurs, and the reading agrees with the game on every frame.
        for e in BALL_EVENTS {
            let (hit, all) = seen.get(&e).copied().unwrap_or_default();
            assert!(all >= 10 && hit == all, "{h}x{w} {e:?}: {hit} of {all} read");
        }
        assert_eq!(agree, frames, "{h}x{w}: frames where the reading and the game agree");
    }
}

#[test]
fn a_ball_moves_as_in_the_game_on_real_tracks_and_not_when_it_teleports() {
    for (h, w) in [(64, 64), (128, 96), (96, 192)] {
        let shape = FrameShape { height: h, width: w, channels: 3 };
        let unit = w as f64 / 64.0;
        let (mut put_backs, mut frames) = (0usize, 0usize);
        for episode in 0..3u64 {
            let mut resting = vec![];
            let track = play_breakout(shape, episode, (400, 0.0), |before, game| {
                if resting.is_empty() {
                    resting.push(before.ball_resting());
                }
                resting.push(game.ball_resting());
                put_backs += usize::from(!before.ball_resting() && game.ball_resting());
            });
            frames += track.len();
            let moves = ball_moves_as_in_the_game(&track, shape);
            assert!(moves.iter().all(|&m| m), "{h}x{w} episode {episode}: every real frame passes");
            for t in 1..track.len() {
                let Some([x, y]) = track[t].ball else { continue };
                // The ball moved ten logical units sideways: a jump the game never makes.
                let mut jumped = track.clone();
                let x2 = if x > w as f64 / 2.0 { x - 10.0 * unit } else { x + 10.0 * unit };
                jumped[t].ball = Some([x2, y]);
                assert!(!ball_moves_as_in_the_game(&jumped, shape)[t], "{h}x{w} episode {episode} frame {t}");
                // Unseen for a frame: the ball may come back only resting on the paddle.
                let mut gone = track.clone();
                gone[t - 1].ball = None;
                let back = ball_moves_as_in_the_game(&gone, shape);
                assert!(!back[t - 1]);
                if resting[t] {
                    assert!(back[t], "{h}x{w} episode {episode} frame {t}: a ball resting on the paddle");
                } else if !ball_at_rest_height(&track[t], shape) {
                    assert!(!back[t], "{h}x{w} episode {episode} frame {t}: a ball appearing in flight");
                }
            }
        }
        assert!(put_backs >= 1 && frames > 600, "{h}x{w}: {put_backs} put-backs in {frames} frames");
    }
    // A ball at rest height but beside the paddle was not put there by the game.
    let shape = FrameShape { height: 64, width: 64, channels: 3 };
    let mut game = Breakout::new(shape);
    game.reset(0);
    let resting = detect_breakout(&render(&game), shape).unwrap();
    let [x, y] = resting.ball.unwrap();
    let gone = BreakoutObjects { ball: None, ..resting.clone() };
    assert_eq!(ball_moves_as_in_the_game(&[gone.clone(), resting.clone()], shape), [false, true]);
    let beside = BreakoutObjects { ball: Some([if x > 32.0 { x - 20.0 } else { x + 20.0 }, y]), ..resting };
    assert_eq!(ball_moves_as_in_the_game(&[gone, beside], shape), [false, false]);
}

#[test]
fn a_vanishing_ball_is_placed_where_the_game_last_had_it() {
    // Real tracks with the ball erased for three frames from every frame in turn; the place is
    // checked against the game's own ball.
    for (h, w) in [(64, 64), (128, 96), (96, 192)] {
        let shape = FrameShape { height: h, width: w, channels: 3 };
        let mut seen = std::collections::HashMap::new();
        for episode in 0..3u64 {
            let mut centres = vec![];
            let mut resting = vec![];
            let track = play_breakout(shape, episode, (400, 0.0), |before, game| {
                if centres.is_empty() {
                    centres.push(before.ball_centre().unwrap());
                    resting.push(before.ball_resting());
                }
                centres.push(game.ball_centre().expect("the game always shows its ball"));
                resting.push(game.ball_resting());
            });
            for (objects, &rests) in track.iter().zip(&resting) {
                assert!(!rests || ball_at_rest_height(objects, shape), "{h}x{w}: a resting ball");
            }
            assert_eq!(first_vanishing(&track, shape, 1), None, "the game never loses sight of its ball");
            for cut in 1..track.len() {
                let mut erased = track.clone();
                for o in erased.iter_mut().skip(cut).take(3) {
                    o.ball = None;
                }
                let v = first_vanishing(&erased, shape, 1).expect("the ball vanishes at the cut");
                let expected = VanishPlace::of_logical_centre(centres[cut - 1]);
                assert_eq!((v.frame, v.place), (cut, expected), "{h}x{w} episode {episode} cut {cut}");
                assert_eq!(v.returned, cut + 3 < track.len());
                *seen.entry(expected).or_insert(0usize) += 1;
            }
        }
        for place in VANISH_PLACES {
            assert!(seen.get(&place).copied().unwrap_or(0) >= 3, "{h}x{w}: {place:?} seen {seen:?}");
        }
    }
    // The places, from the game's geometry (logical units; the canvas is 64 square).
    for (centre, place) in [
        ([32.0, 55.5], VanishPlace::AtPaddle), // resting on the paddle
        ([32.0, 59.0], VanishPlace::BelowPaddle),
        ([32.0, 30.0], VanishPlace::AtBricks), // just below the lowest row
        ([32.0, 5.5], VanishPlace::AtBricks),  // above the rows, under the top wall
        ([4.0, 44.0], VanishPlace::AtSideWall),
        ([60.0, 44.0], VanishPlace::AtSideWall),
        ([32.0, 44.0], VanishPlace::Open),
    ] {
        assert_eq!(VanishPlace::of_logical_centre(centre), place, "{centre:?}");
    }
    // A ball gone before `from` does not count.
    let shape = FrameShape { height: 64, width: 64, channels: 3 };
    let mut game = Breakout::new(shape);
    game.reset(0);
    let seen = detect_breakout(&render(&game), shape).unwrap();
    let gone = BreakoutObjects { ball: None, ..seen.clone() };
    assert_eq!(first_vanishing(&[seen.clone(), gone.clone(), gone], shape, 2), None);
}
