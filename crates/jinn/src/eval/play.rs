//! `jinn eval play`: play a world model of breakout as a person would — through `jinn play`'s
//! HTTP API on a loopback socket — and measure what they would notice:
//!
//! * **steering**: from start frames of a split, hold the key named `left` (then, from the
//!   same start, `right`) for `--hold` steps; the paddle's position, read off the returned
//!   frames by the object detector, must move that way (by ≥ 8 px of a 64-px frame, scaled to
//!   the frame width, wherever the paddle has room for that and one more step). A start is a
//!   frame the recorded game went on from for `--hold` steps: at an episode's last frames,
//!   after its last ball is lost, the game is over and takes no keys;
//! * **ball in play**: from frames where the ball is in flight, take `--play-steps` steps of
//!   random keys; the share of frames showing a ball, beside the same share over the real
//!   continuation of those episodes;
//! * **off-palette pixels** of the played frames, beside their share in the tokenizer's
//!   reconstructions of the real frames (blur is not an artefact).
//!
//! The keys are the play page's: the session API is driven with the action ids the page binds
//! to ArrowLeft and ArrowRight, so a model whose keys mean nothing fails here.

use crate::device::DeviceArgs;
use crate::play::{parse_temperature, GenieWorld, PLAY_MASKGIT_STEPS, PLAY_TEMPERATURE};
use anyhow::{bail, Context};
use jinn_data::atomic_file::write_atomically;
use jinn_data::dataset::Dataset;
use jinn_data::gif_writer::{write_panels_gif, GifOptions, Panel};
use jinn_data::objects::{
    ball_at_rest_height, ball_events, ball_moves_as_in_the_game, breakout_paddle_range, breakout_paddle_step,
    detect_breakout, first_vanishing, off_palette_share, BreakoutObjects, Game, VanishPlace, BALL_EVENTS,
    DEFAULT_OFF_PALETTE_THRESHOLD,
};
use jinn_data::FrameShape;
use jinn_serve::api::FrameReply;
use jinn_serve::png::{decode_png, from_base64};
use jinn_serve::{Frame, Limits, ServeConfig, Server, WorldModel};
use rand::Rng;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `jinn eval play`.
#[derive(clap::Args, Clone)]
pub struct EvalPlayArgs {
    /// Dynamics run directory (its newest good checkpoint).
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Dataset directory: names the latent actions (as `jinn play`) and gives the start frames.
    #[arg(long)]
    pub data: PathBuf,
    /// Split the start frames come from.
    #[arg(long, default_value = "val")]
    pub split: String,
    /// Start points for each measurement (a ball once lost stays lost, so the frames of one
    /// start are far from independent: 8 starts move the ball share by ±10 points). Steering
    /// leaves out the starts drawn at a game that is over.
    #[arg(long, default_value_t = 32)]
    pub starts: usize,
    /// Steps each steering key is held.
    #[arg(long, default_value_t = 8)]
    pub hold: usize,
    /// Steps of play from frames with the ball in flight.
    #[arg(long, default_value_t = 30)]
    pub play_steps: usize,
    /// MaskGIT refinement steps per frame (default: `jinn play`'s).
    #[arg(long, default_value_t = PLAY_MASKGIT_STEPS)]
    pub maskgit_steps: usize,
    /// Frames the dynamics sees per step (default: `jinn play`'s).
    #[arg(long)]
    pub window: Option<usize>,
    /// Keys pressed at random in the ball-in-play starts: every action of the page, or only
    /// those it binds to a key by an action's name (arrows, space), leaving out latent codes
    /// without a clear partner action.
    #[arg(long, value_enum, default_value_t = PlayKeys::All)]
    pub keys: PlayKeys,
    /// Drive the ball-in-play starts with the LAM's codes of the real continuation instead of
    /// random keys: the gap to the random-key figure is what the codes tell the model about
    /// the ball beyond the keys' meaning.
    #[arg(long)]
    pub replay: bool,
    /// Sampling temperature (default: `jinn play`'s).
    #[arg(long, default_value_t = PLAY_TEMPERATURE, value_parser = parse_temperature)]
    pub temperature: f64,
    /// Take the most likely token instead of sampling.
    #[arg(long)]
    pub argmax: bool,
    /// Seed of the start points, the random keys and the sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory: metrics.json, and in steering/ a GIF of each failed steering trial
    /// (the left hold beside the right one; the folder is emptied first).
    #[arg(long, default_value = "eval-play")]
    pub out: PathBuf,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Which keys `jinn eval play` presses at random (`--keys`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlayKeys {
    /// Every key of the page.
    All,
    /// Only the actions bound to a key by an action's name.
    Named,
}

/// One steering trial: the paddle's centre before and after holding each key.
#[derive(Debug, Clone, Serialize)]
pub struct SteeringTrial {
    /// Episode and frame of the split the session started from (its last start frame).
    pub episode: usize,
    /// Frame index within the episode.
    pub frame: usize,
    /// Paddle centre x (px) in the start frame.
    pub paddle_x: f64,
    /// Paddle displacement (px) after holding left; `None` when no paddle was found.
    pub left_dx: Option<f64>,
    /// Paddle displacement (px) after holding right.
    pub right_dx: Option<f64>,
    /// Whether the paddle had room to move the required distance left / right, plus one
    /// step (the wall stops it).
    pub room: [bool; 2],
}

impl SteeringTrial {
    /// The holds (left, right) whose direction had room, each with its displacement and sign.
    fn with_room(&self) -> impl Iterator<Item = (Option<f64>, f64)> + '_ {
        [(self.room[0], self.left_dx, -1.0), (self.room[1], self.right_dx, 1.0)]
            .into_iter()
            .filter(|&(room, ..)| room)
            .map(|(_, dx, sign)| (dx, sign))
    }

    /// Holds with room.
    fn tried(&self) -> usize {
        self.with_room().count()
    }

    /// Holds with room that moved the paddle `required_px` the held way.
    fn passes(&self, required_px: f64) -> usize {
        self.with_room().filter(|&(dx, sign)| dx.is_some_and(|d| sign * d >= required_px)).count()
    }

    /// Every hold with room passed, and neither hold lost the paddle.
    fn passed(&self, required_px: f64) -> bool {
        self.passes(required_px) == self.tried() && self.left_dx.is_some() && self.right_dx.is_some()
    }
}

/// The first of the `context` start frames of a steering trial in a record of `len` frames,
/// drawn from `rng`. `None` for a record shorter than `context` (nothing drawn), and, after the
/// same one draw, where the recorded game does not go on for `hold` steps after the start
/// frames: an episode's last frames, after its last ball is lost, are a game that is over.
fn steering_start(rng: &mut impl Rng, len: usize, context: usize, hold: usize) -> Option<usize> {
    if len < context {
        return None;
    }
    let first = rng.random_range(0..=len - context);
    (first + context + hold <= len).then_some(first)
}

/// A failed steering trial as `path`: the left hold beside the right one, from the start frame.
fn write_hold_gif(path: &Path, [left, right]: [&[u8]; 2], shape: FrameShape) -> anyhow::Result<()> {
    let panels = [Panel { label: "left held", frames: left }, Panel { label: "right held", frames: right }];
    let options = GifOptions { fps: 4.0, ..GifOptions::default() };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_panels_gif(path, &panels, shape, &options).with_context(|| format!("writing {}", path.display()))
}

/// Starts of the ball measurement whose ball vanished at the same place.
#[derive(Debug, Clone, Serialize)]
pub struct BallVanished {
    /// Where the ball was last seen.
    pub place: VanishPlace,
    /// Starts where it vanished so.
    pub starts: usize,
    /// Of those, starts where a ball was seen again later.
    pub returned: usize,
}

/// One latent code on the real transitions of the ball-in-play starts: what the ball did
/// when the LAM chose it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CodeAndBall {
    /// Transitions given this code.
    pub transitions: usize,
    /// Of those, transitions into a frame with the ball at the height of one resting on the
    /// paddle.
    pub at_rest_height: usize,
    /// Of those, transitions by which the ball changed its course, per event, in
    /// [`BALL_EVENTS`] order.
    pub events: [usize; BALL_EVENTS.len()],
}

/// What `jinn eval play` measured.
#[derive(Debug, Clone, Serialize)]
pub struct PlayMetrics {
    /// Action ids driven as left and right, with their labels.
    pub left: (u32, String),
    /// See `left`.
    pub right: (u32, String),
    /// The page's label of each action id.
    pub labels: Vec<String>,
    /// Required paddle movement (px) over the hold (8 px at 64 px width).
    pub required_px: f64,
    /// Steering trials.
    pub steering: Vec<SteeringTrial>,
    /// Trials with room that moved the required distance the right way, over trials with
    /// room (left and right counted separately).
    pub steering_pass: f64,
    /// Steering starts left out: the recorded game does not go on for the hold after them (an
    /// episode's last frames, a game that is over), or the record is shorter than the start.
    pub steering_left_out: usize,
    /// Holds (left and right of every trial, room or not) after which no paddle is seen: a
    /// world that does not know what a key does against a wall slides the paddle into it.
    pub paddle_lost: usize,
    /// Share of played frames showing a ball (from frames with the ball in flight).
    pub ball_present: f64,
    /// Frames played for `ball_present` (starts × `--play-steps`).
    pub played_frames: usize,
    /// The same share over the real continuation of those episodes.
    pub ball_present_real: f64,
    /// Share of played frames whose ball moved as the game moves it
    /// ([`ball_moves_as_in_the_game`]): present, and neither teleported nor reappeared
    /// anywhere but on the paddle. Noisy sampling can keep a ball present by redrawing it
    /// elsewhere; this share does not count such frames.
    pub ball_moves: f64,
    /// The same share over the real continuations.
    pub ball_moves_real: f64,
    /// Starts played for `ball_present`.
    pub ball_starts: usize,
    /// Where the ball first vanished in those starts, the starts where it did, and of those
    /// the starts where a ball came back later; most starts first.
    pub ball_vanished: Vec<BallVanished>,
    /// For a model with a LAM, each latent code on the real frames of the ball-in-play
    /// starts: a code that goes with the ball's state rather than a key, pressed at random,
    /// tells the dynamics something the frames contradict.
    pub codes_and_ball: Vec<CodeAndBall>,
    /// Mean off-palette share of the played frames.
    pub off_palette: f64,
    /// Mean off-palette share of the tokenizer's reconstructions of real frames.
    pub off_palette_reconstruction: f64,
}

/// Run `jinn eval play` and print its report.
pub fn run(a: EvalPlayArgs) -> anyhow::Result<()> {
    let m = evaluate_play(&a)?;
    print_report(&m, &a);
    println!("metrics written to {}", a.out.join("metrics.json").display());
    Ok(())
}

/// Serve the model on a loopback port, play it, write `a.out/metrics.json`.
pub fn evaluate_play(a: &EvalPlayArgs) -> anyhow::Result<PlayMetrics> {
    if a.starts == 0 || a.hold == 0 || a.play_steps == 0 {
        bail!("--starts, --hold and --play-steps must be ≥ 1");
    }
    let sampler = jinn_world::SamplerConfig {
        maskgit_steps: a.maskgit_steps,
        temperature: a.temperature,
        argmax: a.argmax,
        seed: a.seed,
        ..Default::default()
    };
    let world = Arc::new(GenieWorld::load(&a.ckpt, &a.device.device(), Some(&a.data), sampler, a.window)?);
    let info = world.info().clone();
    let shape = info.frame;
    let by_key = |key: &str| {
        info.actions.iter().find(|b| b.key.as_deref() == Some(key)).map(|b| (b.id, b.label.clone()))
    };
    let labels: Vec<&str> = info.actions.iter().map(|b| b.label.as_str()).collect();
    let (Some(left), Some(right)) = (by_key("ArrowLeft"), by_key("ArrowRight")) else {
        bail!(
            "--ckpt {}: no action is bound to ArrowLeft and ArrowRight (actions: {}); latent codes are \
             named by the recorded actions of --data, so the data must record breakout's actions",
            a.ckpt.display(),
            labels.join(", ")
        );
    };
    let dataset = Dataset::open_for_model(&a.data.join(&a.split), 1, shape)
        .with_context(|| format!("--data {}: opening split '{}'", a.data.display(), a.split))?;
    if dataset.records().is_empty() {
        bail!("--data {}: split '{}' has no episodes", a.data.display(), a.split);
    }
    let env = dataset.metadata().map(|m| m.env.clone()).unwrap_or_default();
    if Game::from_env_name(&env) != Some(Game::Breakout) {
        bail!(
            "--data {}: jinn eval play reads breakout frames (paddle, ball), but the dataset's metadata.json \
             names env \"{env}\"",
            a.data.display()
        );
    }

    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let limits = Limits { max_sessions: 4, ..Limits::default() };
    let config = ServeConfig { bind: "127.0.0.1:0".parse()?, limits };
    let server = rt
        .block_on(Server::start(world.clone() as Arc<dyn WorldModel>, config))
        .context("starting the server")?;
    let client = PlayClient::new(format!("http://{}", server.local_addr()), &a.split, shape);
    let context = info.max_start_frames;
    let mut rng = jinn_data::rng::rng_for(a.seed, "eval-play", 0);
    let required_px = 8.0 * shape.width as f64 / 64.0;
    // Room to move: the required distance plus one step before the wall stops the paddle, so
    // a paddle the model drives against the wall is not judged on sub-pixel detail there.
    let [lo, hi] = breakout_paddle_range(shape);
    let room_px = required_px + breakout_paddle_step(shape);

    // Steering: the same start, left then right; failed trials as GIFs in OUT/steering.
    let fails = a.out.join("steering");
    if fails.exists() {
        std::fs::remove_dir_all(&fails).with_context(|| format!("emptying {}", fails.display()))?;
    }
    let mut steering = Vec::new();
    let mut steering_left_out = 0;
    for i in 0..a.starts {
        let episode = i % dataset.records().len();
        let len = dataset.records()[episode].len as usize;
        let Some(first) = steering_start(&mut rng, len, context, a.hold) else {
            steering_left_out += 1;
            continue;
        };
        // The paddle before and after holding `action`, and the frames shown `[hold + 1, h, w, c]`.
        let hold = |action: u32| -> anyhow::Result<(Option<f64>, Option<f64>, Vec<u8>)> {
            let (id, start) = client.create(episode, first)?;
            let x0 = detect_breakout(&start.pixels, shape)?.paddle_x;
            let mut frames = start.pixels;
            let mut last = Vec::new();
            for _ in 0..a.hold {
                last = client.step(&id, action)?.pixels;
                frames.extend_from_slice(&last);
            }
            client.delete(&id);
            Ok((x0, detect_breakout(&last, shape)?.paddle_x, frames))
        };
        let (x0, left_end, left_frames) = hold(left.0)?;
        let (_, right_end, right_frames) = hold(right.0)?;
        let Some(x0) = x0 else { continue };
        let trial = SteeringTrial {
            episode,
            frame: first + context - 1,
            paddle_x: x0,
            left_dx: left_end.map(|x| x - x0),
            right_dx: right_end.map(|x| x - x0),
            room: [x0 - lo >= room_px, hi - x0 >= room_px],
        };
        if !trial.passed(required_px) {
            let path = a.out.join("steering").join(format!("episode{episode}-frame{}.gif", trial.frame));
            write_hold_gif(&path, [&left_frames, &right_frames], shape)?;
        }
        steering.push(trial);
    }
    let tried: usize = steering.iter().map(|t| t.tried()).sum();
    let passed: usize = steering.iter().map(|t| t.passes(required_px)).sum();

    // Ball in play: starts whose last frame shows the ball moving.
    let threshold = DEFAULT_OFF_PALETTE_THRESHOLD;
    let (mut played, mut with_ball, mut real_frames, mut real_with_ball) = (0usize, 0usize, 0usize, 0usize);
    let (mut ball_moves, mut real_ball_moves) = (0usize, 0usize);
    let (mut off, mut off_recon, mut recon_frames) = (0.0, 0.0, 0usize);
    // The keys pressed at random: every key of the page, or only those named by an action.
    let keys: Vec<u32> = match a.keys {
        PlayKeys::All => info.actions.iter().map(|b| b.id).collect(),
        PlayKeys::Named => info.actions.iter().filter(|b| b.key.is_some()).map(|b| b.id).collect(),
    };
    let mut found = 0;
    let mut vanished: Vec<BallVanished> = Vec::new();
    let mut codes_and_ball: Vec<CodeAndBall> = Vec::new();
    for episode in (0..dataset.records().len()).cycle().take(dataset.records().len() * 4) {
        if found == a.starts {
            break;
        }
        let r = dataset.records()[episode];
        let len = r.len as usize;
        // The session starts from frames `first..first + context`; the real frame before them
        // tells whether the ball is in flight even with one start frame.
        let need = context + a.play_steps;
        if len < need + 1 {
            continue;
        }
        let first = rng.random_range(1..=len - need);
        let real = dataset.read_window(r, first - 1, need + 1)?.frames; // [need + 1, h, w, c]
        let fb = shape.frame_bytes();
        let ball = |t: usize| detect_breakout(&real[t * fb..(t + 1) * fb], shape).map(|o| o.ball);
        let in_flight = match (ball(context - 1)?, ball(context)?) {
            (Some(p), Some(q)) => (p[0] - q[0]).abs() + (p[1] - q[1]).abs() >= 1.0,
            _ => false,
        };
        if !in_flight {
            continue;
        }
        found += 1;
        let (id, _) = client.create(episode, first)?;
        let real_track = (0..=need)
            .map(|t| detect_breakout(&real[t * fb..(t + 1) * fb], shape))
            .collect::<Result<Vec<_>, _>>()?;
        // The frame before the session and its start frames, then the played ones.
        let mut track = real_track[..=context].to_vec();
        // The LAM's codes of the real frames: code i is the transition from frame i to i + 1.
        let codes = world.latent_codes(&real, shape)?;
        if let Some(codes) = &codes {
            tally_codes(&mut codes_and_ball, codes, &real_track, shape);
        }
        let replay = match (a.replay, codes) {
            (false, _) => None,
            (true, Some(codes)) => Some(codes),
            (true, None) => bail!(
                "--replay: the model of --ckpt {} has no LAM (it was trained on recorded actions)",
                a.ckpt.display()
            ),
        };
        for k in 0..a.play_steps {
            let random = keys[rng.random_range(0..keys.len())];
            let action = replay.as_ref().map_or(random, |codes| codes[context + k]);
            let frame = client.step(&id, action)?;
            let objects = detect_breakout(&frame.pixels, shape)?;
            played += 1;
            with_ball += usize::from(objects.ball.is_some());
            off += off_palette_share(&frame.pixels, shape, Game::Breakout, threshold)?;
            track.push(objects);
        }
        client.delete(&id);
        ball_moves += ball_moves_as_in_the_game(&track, shape)[context + 1..].iter().filter(|&&m| m).count();
        real_ball_moves +=
            ball_moves_as_in_the_game(&real_track, shape)[context + 1..].iter().filter(|&&m| m).count();
        if let Some(v) = first_vanishing(&track, shape, context + 1) {
            match vanished.iter_mut().find(|b: &&mut BallVanished| b.place == v.place) {
                Some(b) => {
                    b.starts += 1;
                    b.returned += usize::from(v.returned);
                }
                None => vanished.push(BallVanished {
                    place: v.place,
                    starts: 1,
                    returned: usize::from(v.returned),
                }),
            }
        }
        for objects in &real_track[context + 1..] {
            real_frames += 1;
            real_with_ball += usize::from(objects.ball.is_some());
        }
        for frame in world.reconstruct(&real[fb..], shape)? {
            recon_frames += 1;
            off_recon += off_palette_share(&frame, shape, Game::Breakout, threshold)?;
        }
    }
    rt.block_on(server.shutdown())?;
    if found == 0 {
        bail!(
            "--data {}: found no start in split '{}' with the ball in flight (episodes need ≥ {} frames)",
            a.data.display(),
            a.split,
            context + a.play_steps + 1
        );
    }
    let share = |n: usize, d: usize| if d > 0 { n as f64 / d as f64 } else { f64::NAN };
    let mut action_labels =
        vec![String::new(); info.actions.iter().map(|b| b.id as usize + 1).max().unwrap_or(0)];
    for b in &info.actions {
        action_labels[b.id as usize] = b.label.clone();
    }
    let m = PlayMetrics {
        left,
        labels: action_labels,
        right,
        required_px,
        steering_pass: share(passed, tried),
        steering_left_out,
        paddle_lost: steering
            .iter()
            .map(|t| usize::from(t.left_dx.is_none()) + usize::from(t.right_dx.is_none()))
            .sum(),
        steering,
        ball_present: share(with_ball, played),
        played_frames: played,
        ball_present_real: share(real_with_ball, real_frames),
        ball_moves: share(ball_moves, played),
        ball_moves_real: share(real_ball_moves, real_frames),
        ball_starts: found,
        ball_vanished: {
            vanished.sort_by_key(|b| std::cmp::Reverse(b.starts));
            vanished
        },
        codes_and_ball,
        off_palette: off / played.max(1) as f64,
        off_palette_reconstruction: off_recon / recon_frames.max(1) as f64,
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let json = serde_json::json!({
        "checkpoint": a.ckpt, "data": a.data, "split": a.split, "hold": a.hold,
        "play_steps": a.play_steps, "replay": a.replay, "keys": a.keys, "maskgit_steps": a.maskgit_steps, "temperature": a.temperature, "argmax": a.argmax,
        "seed": a.seed, "model": info.name, "metrics": m,
    });
    write_atomically(a.out.join("metrics.json"), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(m)
}

/// Add each transition of a real clip (`track`, its detections) to the tally of the code the
/// LAM gave it (`codes[i]`: frame i to i + 1).
fn tally_codes(tally: &mut Vec<CodeAndBall>, codes: &[u32], track: &[BreakoutObjects], shape: FrameShape) {
    let events = ball_events(track, shape);
    for (i, &code) in codes.iter().enumerate() {
        let c = code as usize;
        if tally.len() <= c {
            tally.resize(c + 1, CodeAndBall::default());
        }
        let t = &mut tally[c];
        t.transitions += 1;
        t.at_rest_height += usize::from(ball_at_rest_height(&track[i + 1], shape));
        if let Some(e) = events[i + 1] {
            t.events[BALL_EVENTS.iter().position(|&k| k == e).expect("every event listed")] += 1;
        }
    }
}

/// Print the steering table and the ball and palette lines.
pub fn print_report(m: &PlayMetrics, a: &EvalPlayArgs) {
    println!(
        "steering: keys ArrowLeft = action {} \"{}\", ArrowRight = action {} \"{}\", each held {} steps",
        m.left.0, m.left.1, m.right.0, m.right.1, a.hold
    );
    println!("  {:>7} {:>6} {:>9} {:>8} {:>8}", "episode", "frame", "paddle x", "left Δx", "right Δx");
    let dx = |d: Option<f64>, room: bool| match (d, room) {
        (Some(d), true) => format!("{d:+.1}"),
        (Some(d), false) => format!("({d:+.1})"),
        (None, _) => "none".to_string(),
    };
    for t in &m.steering {
        println!(
            "  {:>7} {:>6} {:>9.1} {:>8} {:>8}",
            t.episode,
            t.frame,
            t.paddle_x,
            dx(t.left_dx, t.room[0]),
            dx(t.right_dx, t.room[1])
        );
    }
    println!(
        "  moved ≥ {:.0} px the right way: {:.0}% of the trials with room (in parentheses: no room)",
        m.required_px,
        100.0 * m.steering_pass
    );
    println!("  paddle gone (\"none\") after {} of {} holds", m.paddle_lost, 2 * m.steering.len());
    if m.steering_left_out > 0 {
        println!(
            "  {} of {} starts left out: the recorded game does not go on for the hold after them",
            m.steering_left_out, a.starts
        );
    }
    let failed = m.steering.iter().filter(|t| !t.passed(m.required_px)).count();
    if failed > 0 {
        println!(
            "  failed trials ({failed}) as GIFs, the left hold beside the right: {}",
            a.out.join("steering").display()
        );
    }
    println!(
        "ball in play: present in {:.0}% of {} played frames ({} steps of {} from each start; real continuations: {:.0}%)",
        100.0 * m.ball_present,
        m.played_frames,
        a.play_steps,
        match (a.replay, a.keys) {
            (true, _) => "the LAM's codes of the real continuation",
            (false, PlayKeys::All) => "random keys",
            (false, PlayKeys::Named) => "random named keys",
        },
        100.0 * m.ball_present_real
    );
    println!(
        "  moving as the game moves it (no jumps; back only on the paddle): {:.0}% of played frames (real: {:.0}%)",
        100.0 * m.ball_moves,
        100.0 * m.ball_moves_real
    );
    let lost: usize = m.ball_vanished.iter().map(|b| b.starts).sum();
    println!("  the ball vanished in {lost} of {} starts:", m.ball_starts);
    for b in &m.ball_vanished {
        println!("    {:<24} {:>3} starts, back later in {}", b.place.label(), b.starts, b.returned);
    }
    if !m.codes_and_ball.is_empty() {
        println!("the LAM's codes on the real frames of those starts, and the ball:");
        let events: Vec<String> = BALL_EVENTS.iter().map(|e| format!("{:>13}", e.label())).collect();
        println!("  {:<14} {:>11} {:>11} {}", "code", "transitions", "rest height", events.join(" "));
        for (code, c) in m.codes_and_ball.iter().enumerate() {
            let label =
                m.labels.get(code).filter(|l| !l.is_empty()).map_or(String::new(), |l| format!(" ({l})"));
            let events: Vec<String> = c.events.iter().map(|n| format!("{n:>13}")).collect();
            println!(
                "  {:<14} {:>11} {:>11} {}",
                format!("{code}{label}"),
                c.transitions,
                c.at_rest_height,
                events.join(" ")
            );
        }
    }
    println!(
        "off-palette pixels: {:.4} of played frames, {:.4} of the tokenizer's reconstructions of real frames \
         (×{:.2})",
        m.off_palette,
        m.off_palette_reconstruction,
        m.off_palette / m.off_palette_reconstruction.max(1e-9)
    );
}

/// The play API over HTTP, as the page drives it.
struct PlayClient {
    agent: ureq::Agent,
    base: String,
    split: String,
    shape: FrameShape,
}

impl PlayClient {
    fn new(base: String, split: &str, shape: FrameShape) -> Self {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        PlayClient { agent, base, split: split.to_string(), shape }
    }

    /// A session from frames `frame..` of `episode`; its id and current frame.
    fn create(&self, episode: usize, frame: usize) -> anyhow::Result<(String, Frame)> {
        let body =
            serde_json::json!({ "dataset": { "split": self.split, "episode": episode, "frame": frame } });
        let reply = self.post("/v1/world/sessions", &body.to_string())?;
        let frame = self.frame(&reply)?;
        Ok((reply.id, frame))
    }

    /// Step session `id` with `action`; the new frame.
    fn step(&self, id: &str, action: u32) -> anyhow::Result<Frame> {
        let reply =
            self.post(&format!("/v1/world/sessions/{id}/step"), &format!("{{\"action\": {action}}}"))?;
        self.frame(&reply)
    }

    /// Close session `id` (best effort: it expires anyway).
    fn delete(&self, id: &str) {
        let _ = self.agent.delete(format!("{}/v1/world/sessions/{id}", self.base)).call();
    }

    fn post(&self, path: &str, body: &str) -> anyhow::Result<FrameReply> {
        let mut res = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .send(body.to_string())
            .with_context(|| format!("POST {path}"))?;
        let status = res.status().as_u16();
        let bytes = res.body_mut().read_to_vec()?;
        if !(200..300).contains(&status) {
            bail!("POST {path}: HTTP {status}: {}", String::from_utf8_lossy(&bytes));
        }
        serde_json::from_slice(&bytes).with_context(|| format!("POST {path}: reading the reply"))
    }

    fn frame(&self, reply: &FrameReply) -> anyhow::Result<Frame> {
        let png = from_base64(&reply.frame).map_err(|e| anyhow::anyhow!("{e}"))?;
        decode_png(&png, self.shape).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jinn_data::objects::BallEvent;

    #[test]
    fn steering_starts_leave_room_for_the_hold_without_drawing_again() {
        let (len, context, hold) = (20, 2, 8);
        let mut rng = jinn_data::rng::rng_for(3, "eval-play", 0);
        let mut plain = jinn_data::rng::rng_for(3, "eval-play", 0);
        let mut kept = 0;
        for _ in 0..400 {
            let start = steering_start(&mut rng, len, context, hold);
            // One draw per call, as a plain draw of the start: the other trials stay the same.
            let drawn = plain.random_range(0..=len - context);
            match start {
                Some(first) => {
                    assert_eq!(first, drawn);
                    assert!(first + context + hold <= len, "{first}");
                    kept += 1;
                }
                None => assert!(drawn + context + hold > len, "{drawn} left out"),
            }
        }
        // 11 of the 19 possible starts leave room for the hold.
        assert!((150..=310).contains(&kept), "{kept} of 400 kept");
        // A record shorter than the context draws nothing.
        assert_eq!(steering_start(&mut rng, 1, context, hold), None);
        assert_eq!(rng.random_range(0..1000u32), plain.random_range(0..1000u32));
    }

    #[test]
    fn each_transition_counts_for_its_code_with_the_ball_it_leads_to() {
        let shape = FrameShape { height: 64, width: 64, channels: 3 };
        let at = |ball: Option<[f64; 2]>| BreakoutObjects {
            ball,
            paddle_x: Some(30.0),
            bricks: 60,
            standing: [[true; 10]; 6],
        };
        // Resting on the paddle (row 55 at 64 px), riding it, served, on course, gone.
        let track = [
            at(Some([30.0, 55.0])),
            at(Some([30.0, 55.0])),
            at(Some([31.0, 53.0])),
            at(Some([32.0, 51.0])),
            at(None),
        ];
        let mut tally = Vec::new();
        tally_codes(&mut tally, &[3, 3, 2, 1], &track, shape);
        let event = |e: BallEvent| BALL_EVENTS.iter().position(|&k| k == e).unwrap();
        assert_eq!(tally.len(), 4);
        assert_eq!(tally[0].transitions, 0);
        assert_eq!((tally[3].transitions, tally[3].at_rest_height), (2, 1));
        assert_eq!(tally[3].events.iter().sum::<usize>(), 1);
        assert_eq!(tally[3].events[event(BallEvent::Serve)], 1);
        assert_eq!(
            (tally[2].transitions, tally[2].at_rest_height, tally[2].events.iter().sum::<usize>()),
            (1, 0, 0)
        );
        assert_eq!(tally[1].events[event(BallEvent::Lost)], 1);
        // A second clip adds to the same rows.
        tally_codes(&mut tally, &[1], &track[..2], shape);
        assert_eq!((tally[1].transitions, tally[1].at_rest_height), (2, 1));
    }
}
