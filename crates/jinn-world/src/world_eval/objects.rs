//! Object-level scores of generated frames of the built-in games: what a person sees move,
//! which PSNR (dominated by the unchanging background) cannot tell.
//!
//! Every frame, ground truth and generated alike, goes through the same detector
//! ([`jinn_data::objects`]), so the scores compare what the detector reads off both:
//!
//! * breakout — **ball recall** (generated frames showing a ball / ground-truth frames showing
//!   one), **ball hallucination** (generated frames showing a ball where the ground truth has
//!   none / ground-truth frames without one), ball-centre error in px (median, p90, over frames
//!   where both show a ball), paddle-centre error in px, brick-count error;
//! * maze — the view's **displacement** between consecutive frames (share of transitions whose
//!   generated displacement differs from the true one) and the visible-coin count error;
//! * breakout, by what the true ball did first after the context — kept its course, or was
//!   served, bounced off the paddle, a wall or a brick, or lost ([`jinn_data::objects::ball_events`]):
//!   the same ball scores over the frames from that event on, so a ball error can be traced to
//!   the event it grew from; frames from a serve on count as serve frames, since a serve
//!   starts the ball's course afresh (when is the player's choice, carried by the action);
//! * breakout — how far the ball scores would move with another draw of clips
//!   ([`clip_spread`]: a bootstrap over the clips);
//! * both — the share of **off-palette** pixels (colours the game never draws), to be read
//!   against the same share in the tokenizer's reconstructions of real frames (blur is not an
//!   artefact).

use jinn_data::objects::{
    ball_events, detect_breakout, detect_maze, maze_displacement, off_palette_share, BallEvent, Game,
    BALL_EVENTS, DEFAULT_OFF_PALETTE_THRESHOLD,
};
use jinn_data::FrameShape;
use serde::Serialize;

use super::clip_spread::{clip_spread, ClipBall, ClipSpread, BOOTSTRAP_DRAWS};

/// Per generated frame sums of one kind of rollout.
#[derive(Debug, Clone, Default)]
struct FrameTally {
    frames: usize,
    truth_ball: usize,
    ball_found: usize,
    truth_no_ball: usize,
    ball_hallucinated: usize,
    ball_errors: Vec<f64>,
    paddle_errors: Vec<f64>,
    brick_errors: Vec<f64>,
    transitions: usize,
    displacement_wrong: usize,
    coin_errors: Vec<f64>,
    off_palette: f64,
}

/// Object scores of one kind of rollout, summed over clips (see the module docs).
#[derive(Debug, Clone)]
pub struct ObjectTally {
    game: Game,
    per_frame: Vec<FrameTally>,
    /// Breakout: generated frames by the first true ball event after the context (index 0:
    /// none yet, then [`BALL_EVENTS`] in order).
    by_first_event: Vec<FrameTally>,
    /// Breakout: each clip's ball sums over its generated frames.
    clips: Vec<ClipBall>,
}

/// Object scores of generated frames (`None` where nothing could be measured, e.g. recall
/// when no true frame showed a ball).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ObjectScores {
    /// Frames scored.
    pub frames: usize,
    /// Breakout: generated frames with a ball / true frames with a ball (over true frames
    /// with a ball).
    pub ball_recall: Option<f64>,
    /// Breakout: generated frames with a ball over true frames without one.
    pub ball_hallucination: Option<f64>,
    /// Breakout: median ball-centre error (px) where both show a ball.
    pub ball_error_median: Option<f64>,
    /// Breakout: 90th percentile of the ball-centre error (px).
    pub ball_error_p90: Option<f64>,
    /// Breakout: median paddle-centre error (px) where both show the paddle.
    pub paddle_error_median: Option<f64>,
    /// Breakout: mean absolute error of the standing-brick count.
    pub brick_error_mean: Option<f64>,
    /// Maze: share of transitions whose view displacement differs from the true one.
    pub displacement_error: Option<f64>,
    /// Maze: mean absolute error of the visible-coin count.
    pub coin_error_mean: Option<f64>,
    /// Mean share of off-palette pixels.
    pub off_palette_share: f64,
}

/// Overall and per generated frame scores of one kind of rollout.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ObjectMetrics {
    /// Over every generated frame.
    pub overall: ObjectScores,
    /// Per generated frame `0..G` (clip frame `C + i`).
    pub per_frame: Vec<ObjectScores>,
    /// Breakout: over the generated frames grouped by what the true ball did first after the
    /// context (empty for other games).
    pub by_first_event: Vec<EventScores>,
    /// Breakout: over every generated frame but the serve frames of `by_first_event`.
    pub without_serves: Option<ObjectScores>,
    /// Breakout: the spread of the overall ball scores over resamples of the clips.
    pub clip_spread: Option<ClipSpread>,
}

/// Scores over the generated frames from a first true ball event on (see [`ObjectMetrics`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventScores {
    /// The event; `None` for frames before any (the ball kept its course or rode the paddle).
    pub event: Option<BallEvent>,
    /// Their scores.
    pub scores: ObjectScores,
}

impl ObjectTally {
    /// Empty sums for `frames` generated frames of `game`.
    pub fn new(game: Game, frames: usize) -> Self {
        let groups = if game == Game::Breakout { BALL_EVENTS.len() + 1 } else { 0 };
        ObjectTally {
            game,
            per_frame: vec![FrameTally::default(); frames],
            by_first_event: vec![FrameTally::default(); groups],
            clips: Vec::new(),
        }
    }

    /// The game scored.
    pub fn game(&self) -> Game {
        self.game
    }

    /// Score frames `context..s` of `b` clips: `truth` and `generated` are `[b, s, h, w, 3]` u8.
    /// A generated frame's displacement is taken from the frame before it in `generated`
    /// (the last context frame is the real one in both).
    pub fn add(
        &mut self,
        truth: &[u8],
        generated: &[u8],
        shape: FrameShape,
        [b, s]: [usize; 2],
        context: usize,
    ) -> jinn_data::Result<()> {
        let fb = shape.frame_bytes();
        fn frame(v: &[u8], fb: usize, at: usize) -> &[u8] {
            &v[at * fb..(at + 1) * fb]
        }
        for bi in 0..b {
            // Breakout: the true ball's events over the clip, context included (a course is
            // read from the frames before).
            let groups = match self.game {
                Game::Breakout => {
                    let track = (0..s)
                        .map(|t| detect_breakout(frame(truth, fb, bi * s + t), shape))
                        .collect::<Result<Vec<_>, _>>()?;
                    first_event_groups(&ball_events(&track, shape), context)
                }
                Game::Maze => Vec::new(),
            };
            let mut clip = FrameTally::default();
            for t in context..s {
                let (x, y) = (frame(truth, fb, bi * s + t), frame(generated, fb, bi * s + t));
                let tally = &mut self.per_frame[t - context];
                tally.frames += 1;
                tally.off_palette += off_palette_share(y, shape, self.game, DEFAULT_OFF_PALETTE_THRESHOLD)?;
                match self.game {
                    Game::Breakout => {
                        let (truth, made) = (detect_breakout(x, shape)?, detect_breakout(y, shape)?);
                        add_breakout(tally, &truth, &made);
                        add_breakout(&mut clip, &truth, &made);
                        let group = &mut self.by_first_event[groups[t - context]];
                        group.frames += 1;
                        add_breakout(group, &truth, &made);
                    }
                    Game::Maze => {
                        let prev_x = frame(truth, fb, bi * s + t - 1);
                        let prev_y = if t == context { prev_x } else { frame(generated, fb, bi * s + t - 1) };
                        let true_move = maze_displacement(prev_x, x, shape)?;
                        let made_move = maze_displacement(prev_y, y, shape)?;
                        tally.transitions += 1;
                        tally.displacement_wrong += usize::from(true_move != made_move);
                        let coins = |f| detect_maze(f, shape).map(|m| m.coins as f64);
                        tally.coin_errors.push((coins(x)? - coins(y)?).abs());
                    }
                }
            }
            if self.game == Game::Breakout {
                self.clips.push(ClipBall {
                    truth_ball: clip.truth_ball,
                    ball_found: clip.ball_found,
                    errors: clip.ball_errors,
                });
            }
        }
        Ok(())
    }

    /// Overall and per-frame scores.
    pub fn finish(&self) -> ObjectMetrics {
        let mut all = FrameTally::default();
        for f in &self.per_frame {
            all.merge(f);
        }
        let events = std::iter::once(None).chain(BALL_EVENTS.map(Some));
        let without_serves = (!self.by_first_event.is_empty()).then(|| {
            let mut kept = FrameTally::default();
            for (event, tally) in events.clone().zip(&self.by_first_event) {
                if event != Some(BallEvent::Serve) {
                    kept.merge(tally);
                }
            }
            kept.scores()
        });
        let clip_spread = (self.game == Game::Breakout).then(|| clip_spread(&self.clips, BOOTSTRAP_DRAWS, 0));
        ObjectMetrics {
            clip_spread,
            without_serves,
            overall: all.scores(),
            per_frame: self.per_frame.iter().map(FrameTally::scores).collect(),
            by_first_event: events
                .zip(&self.by_first_event)
                .map(|(event, tally)| EventScores { event, scores: tally.scores() })
                .collect(),
        }
    }
}

/// For each generated frame `context..events.len()`, the group of the first event at or
/// after `context` up to that frame (0 for none, else 1 + its index in [`BALL_EVENTS`]); a
/// frame from a serve on is a serve frame whatever came first, since a serve starts the ball's
/// course afresh and sets its error from there.
fn first_event_groups(events: &[Option<BallEvent>], context: usize) -> Vec<usize> {
    let mut first = None;
    (context..events.len())
        .map(|t| {
            first = match (first, events[t]) {
                (_, Some(BallEvent::Serve)) => Some(BallEvent::Serve),
                (None, e) => e,
                (f, _) => f,
            };
            first.map_or(0, |e| 1 + BALL_EVENTS.iter().position(|&k| k == e).expect("every event is listed"))
        })
        .collect()
}

/// Breakout: for each clip of `frames` (`[b, s]` frames of `shape`), whether each transition
/// `t → t + 1` (`[b, s − 1]`, row-major) is a serve: the frames show the ball launched from
/// the paddle, so a LAM's code table can say whether any code names that moment.
pub fn serve_transitions(
    frames: &[u8],
    shape: FrameShape,
    [b, s]: [usize; 2],
) -> Result<Vec<bool>, jinn_data::DataError> {
    let fb = shape.frame_bytes();
    let mut serves = Vec::with_capacity(b * s.saturating_sub(1));
    for bi in 0..b {
        let track = (0..s)
            .map(|t| detect_breakout(&frames[(bi * s + t) * fb..(bi * s + t + 1) * fb], shape))
            .collect::<Result<Vec<_>, _>>()?;
        let events = ball_events(&track, shape);
        serves.extend(events.iter().skip(1).map(|e| *e == Some(BallEvent::Serve)));
    }
    Ok(serves)
}

/// Breakout: one pair of detections (truth, generated) into `tally`.
fn add_breakout(
    tally: &mut FrameTally,
    truth: &jinn_data::objects::BreakoutObjects,
    made: &jinn_data::objects::BreakoutObjects,
) {
    match (truth.ball, made.ball) {
        (Some(t), Some(m)) => {
            tally.truth_ball += 1;
            tally.ball_found += 1;
            tally.ball_errors.push(((t[0] - m[0]).powi(2) + (t[1] - m[1]).powi(2)).sqrt());
        }
        (Some(_), None) => tally.truth_ball += 1,
        (None, found) => {
            tally.truth_no_ball += 1;
            tally.ball_hallucinated += usize::from(found.is_some());
        }
    }
    if let (Some(t), Some(m)) = (truth.paddle_x, made.paddle_x) {
        tally.paddle_errors.push((t - m).abs());
    }
    tally.brick_errors.push((truth.bricks as f64 - made.bricks as f64).abs());
}

impl FrameTally {
    fn merge(&mut self, o: &FrameTally) {
        self.frames += o.frames;
        self.truth_ball += o.truth_ball;
        self.ball_found += o.ball_found;
        self.truth_no_ball += o.truth_no_ball;
        self.ball_hallucinated += o.ball_hallucinated;
        self.ball_errors.extend_from_slice(&o.ball_errors);
        self.paddle_errors.extend_from_slice(&o.paddle_errors);
        self.brick_errors.extend_from_slice(&o.brick_errors);
        self.transitions += o.transitions;
        self.displacement_wrong += o.displacement_wrong;
        self.coin_errors.extend_from_slice(&o.coin_errors);
        self.off_palette += o.off_palette;
    }

    fn scores(&self) -> ObjectScores {
        let ratio = |n: usize, d: usize| (d > 0).then(|| n as f64 / d as f64);
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        ObjectScores {
            frames: self.frames,
            ball_recall: ratio(self.ball_found, self.truth_ball),
            ball_hallucination: ratio(self.ball_hallucinated, self.truth_no_ball),
            ball_error_median: quantile(&self.ball_errors, 0.5),
            ball_error_p90: quantile(&self.ball_errors, 0.9),
            paddle_error_median: quantile(&self.paddle_errors, 0.5),
            brick_error_mean: mean(&self.brick_errors),
            displacement_error: ratio(self.displacement_wrong, self.transitions),
            coin_error_mean: mean(&self.coin_errors),
            off_palette_share: if self.frames > 0 { self.off_palette / self.frames as f64 } else { 0.0 },
        }
    }
}

/// The `q`-quantile of `values` (linear interpolation between the closest ranks); `None`
/// when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let at = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (at - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jinn_data::envs::breakout::Breakout;
    use jinn_data::envs::Env;

    const SHAPE: FrameShape = FrameShape { height: 64, width: 64, channels: 3 };

    /// `clips` breakout clips of `s` frames `[clips, s, 64, 64, 3]`: fire, then alternate left
    /// and right, so the ball flies and the paddle moves.
    fn clips(clips: usize, s: usize) -> Vec<u8> {
        let fb = SHAPE.frame_bytes();
        let mut out = vec![0u8; clips * s * fb];
        for (c, clip) in out.chunks_exact_mut(s * fb).enumerate() {
            let mut game = Breakout::new(SHAPE);
            game.reset(c as u64 + 3);
            game.step(3).unwrap();
            for (t, frame) in clip.chunks_exact_mut(fb).enumerate() {
                game.render(frame);
                game.step(1 + (t / 3) % 2).unwrap();
            }
        }
        out
    }

    /// `truth` `[b, s, 64, 64, 3]` with every frame from `c` on a copy of frame `c − 1`.
    fn copy_last_context_frame(truth: &[u8], [b, s]: [usize; 2], c: usize) -> Vec<u8> {
        let fb = SHAPE.frame_bytes();
        let mut copy = truth.to_vec();
        for bi in 0..b {
            let last = (bi * s + c - 1) * fb;
            for t in c..s {
                copy.copy_within(last..last + fb, (bi * s + t) * fb);
            }
        }
        copy
    }

    /// Clips whose ball rests on the paddle for a few frames, each clip serving at its own
    /// step: exactly the transition in which the game launches the ball is a serve.
    #[test]
    fn serve_transitions_mark_the_launch_the_game_makes() {
        let (b, s) = (3, 8);
        let fb = SHAPE.frame_bytes();
        let mut frames = vec![0u8; b * s * fb];
        let mut launched = Vec::new(); // [b, s − 1]: the game's own account
        for (c, clip) in frames.chunks_exact_mut(s * fb).enumerate() {
            let mut game = Breakout::new(SHAPE);
            game.reset(c as u64 + 11);
            let fire_at = 2 + c; // the action after frame `fire_at`
            for (t, frame) in clip.chunks_exact_mut(fb).enumerate() {
                game.render(frame);
                if t + 1 < s {
                    let resting = game.ball_resting();
                    game.step(if t == fire_at { 3 } else { 1 + t % 2 }).unwrap();
                    launched.push(resting && !game.ball_resting());
                }
            }
        }
        assert_eq!(launched.iter().filter(|&&l| l).count(), b, "one launch per clip");
        assert_eq!(serve_transitions(&frames, SHAPE, [b, s]).unwrap(), launched);
    }

    #[test]
    fn the_truth_scores_perfectly_and_a_copy_of_the_last_frame_loses_the_moving_ball() {
        let (b, s, c) = (2, 6, 2);
        let truth = clips(b, s);
        let mut same = ObjectTally::new(Game::Breakout, s - c);
        same.add(&truth, &truth, SHAPE, [b, s], c).unwrap();
        let m = same.finish();
        let o = &m.overall;
        assert_eq!(o.frames, b * (s - c));
        assert_eq!((o.ball_recall, o.ball_hallucination), (Some(1.0), None));
        assert_eq!(
            (o.ball_error_median, o.ball_error_p90, o.paddle_error_median),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        assert_eq!(o.brick_error_mean, Some(0.0));
        assert!(o.off_palette_share < 1e-9, "{}", o.off_palette_share);
        assert_eq!(m.per_frame.len(), s - c);

        // Every generated frame a copy of the last context frame: the ball is seen, but where
        // it was; the ball moves 2 px a step vertically, so the error grows by frame.
        let copy = copy_last_context_frame(&truth, [b, s], c);
        let mut stale = ObjectTally::new(Game::Breakout, s - c);
        stale.add(&truth, &copy, SHAPE, [b, s], c).unwrap();
        let m = stale.finish();
        assert_eq!(m.overall.ball_recall, Some(1.0));
        let errs: Vec<f64> = m.per_frame.iter().map(|f| f.ball_error_median.unwrap()).collect();
        assert!(errs[0] >= 2.0 && errs.windows(2).all(|w| w[1] > w[0]), "{errs:?}");
    }

    #[test]
    fn frames_are_grouped_by_the_first_true_event_and_serves_take_over() {
        use BallEvent::*;
        let events = [None, Some(WallBounce), None, Some(BrickHit), None, Some(Serve), None, Some(Lost)];
        let group = |e: BallEvent| 1 + BALL_EVENTS.iter().position(|&k| k == e).unwrap();
        // From context 2: frame 2 has no event yet, the brick hit of frame 3 is the first, the
        // serve of frame 5 takes over, the loss of frame 7 does not.
        let expected = [0, group(BrickHit), group(BrickHit), group(Serve), group(Serve), group(Serve)];
        assert_eq!(first_event_groups(&events, 2), expected);
        assert_eq!(first_event_groups(&events, 1)[..2], [group(WallBounce), group(WallBounce)]);
        assert!(first_event_groups(&events, 8).is_empty());
    }

    #[test]
    fn the_groups_of_a_clip_cover_its_generated_frames_and_keep_their_errors() {
        // Long clips, so that the ball meets walls and the paddle moves it.
        let (b, s, c) = (2, 24, 2);
        let truth = clips(b, s);
        let copy = copy_last_context_frame(&truth, [b, s], c);
        for (made, exact) in [(&truth, true), (&copy, false)] {
            let mut tally = ObjectTally::new(Game::Breakout, s - c);
            tally.add(&truth, made, SHAPE, [b, s], c).unwrap();
            let m = tally.finish();
            assert_eq!(m.by_first_event.len(), BALL_EVENTS.len() + 1);
            let frames: usize = m.by_first_event.iter().map(|g| g.scores.frames).sum();
            assert_eq!(frames, b * (s - c));
            // The fired ball flies on course first, then meets something.
            assert!(m.by_first_event[0].scores.frames > 0);
            assert!(m.by_first_event[1..].iter().any(|g| g.scores.frames > 0));
            for g in &m.by_first_event {
                if let (true, Some(e)) = (exact, g.scores.ball_error_p90) {
                    assert_eq!(e, 0.0, "{:?}", g.event);
                }
            }
            let without = m.without_serves.unwrap();
            let serve_frames = m.by_first_event
                [1 + BALL_EVENTS.iter().position(|&e| e == BallEvent::Serve).unwrap()]
            .scores
            .frames;
            assert_eq!(without.frames + serve_frames, b * (s - c));
            if !exact {
                assert!(without.ball_error_p90.unwrap() > 2.0, "{without:?}");
            }
        }
    }

    #[test]
    fn each_clip_keeps_its_own_ball_sums_and_together_they_are_the_overall_ones() {
        let (b, s, c) = (3, 10, 2);
        let truth = clips(b, s);
        let copy = copy_last_context_frame(&truth, [b, s], c);
        let mut tally = ObjectTally::new(Game::Breakout, s - c);
        tally.add(&truth, &copy, SHAPE, [b, s], c).unwrap();
        let mut all = FrameTally::default();
        tally.per_frame.iter().for_each(|f| all.merge(f));
        assert_eq!(tally.clips.len(), b);
        let sum = |f: fn(&ClipBall) -> usize| tally.clips.iter().map(f).sum::<usize>();
        assert_eq!((sum(|c| c.truth_ball), sum(|c| c.ball_found)), (all.truth_ball, all.ball_found));
        // Clip by clip, in the order the frames were added.
        let pooled: Vec<f64> = tally.clips.iter().flat_map(|c| c.errors.clone()).collect();
        let mut by_frame = Vec::new();
        for bi in 0..b {
            let mut one = ObjectTally::new(Game::Breakout, s - c);
            let fb = SHAPE.frame_bytes();
            let clip = |v: &[u8]| v[bi * s * fb..(bi + 1) * s * fb].to_vec();
            one.add(&clip(&truth), &clip(&copy), SHAPE, [1, s], c).unwrap();
            assert_eq!(one.clips, [tally.clips[bi].clone()]);
            by_frame.extend(one.clips[0].errors.clone());
        }
        assert_eq!(pooled, by_frame);
        assert_eq!(pooled.len(), all.ball_errors.len());
        let spread = tally.finish().clip_spread.unwrap();
        assert_eq!(spread.clips, b);
        let [low, high] = spread.ball_error_p90.unwrap();
        let p90 = quantile(&all.ball_errors, 0.9).unwrap();
        assert!(low <= p90 && p90 <= high, "{low} {p90} {high}");
        assert_eq!(ObjectTally::new(Game::Maze, 1).finish().clip_spread, None);
    }

    #[test]
    fn a_frame_without_its_ball_counts_against_recall_and_a_ball_without_truth_as_hallucination() {
        let (b, s, c) = (1, 4, 1);
        let truth = clips(b, s);
        let fb = SHAPE.frame_bytes();
        // Paint the ball out of generated frame 1 (background colour over every white pixel).
        let mut made = truth.clone();
        for px in made[fb..2 * fb].chunks_exact_mut(3) {
            if px == [255, 255, 255] {
                px.copy_from_slice(&[8, 8, 20]);
            }
        }
        let mut t = ObjectTally::new(Game::Breakout, s - c);
        t.add(&truth, &made, SHAPE, [b, s], c).unwrap();
        let m = t.finish();
        assert_eq!(m.per_frame[0].ball_recall, Some(0.0));
        assert_eq!(m.per_frame[1].ball_recall, Some(1.0));
        assert!((m.overall.ball_recall.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // The other way round: truth without a ball, generated with one.
        let mut t = ObjectTally::new(Game::Breakout, s - c);
        t.add(&made, &truth, SHAPE, [b, s], c).unwrap();
        assert_eq!(t.finish().per_frame[0].ball_hallucination, Some(1.0));
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), Some(2.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5));
        assert!((quantile(&[0.0, 10.0], 0.9).unwrap() - 9.0).abs() < 1e-12);
        assert_eq!(quantile(&[5.0], 0.9), Some(5.0));
    }
}
