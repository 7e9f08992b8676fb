//! How far the ball scores of a rollout would move with another draw of clips: a bootstrap
//! over clips (resample the evaluated clips with replacement, score the pooled frames of each
//! resample, read the spread of the scores).
//!
//! The ball's tail figures rest on few frames (a p90 over 64 clips of 30 frames is set by the
//! hundred-odd frames after serves and bounces), so two draws of 64 clips from the same split
//! can score a model several pixels apart. Clips, not frames, are resampled: a clip's frames
//! share one course of the ball, and an error at a bounce carries into every later frame.

use super::objects::quantile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Resamples drawn for [`ClipSpread`].
pub const BOOTSTRAP_DRAWS: usize = 1000;

/// The share of the resamples' scores an interval holds (its ends are their 5th and 95th
/// percentiles).
pub const INTERVAL: f64 = 0.9;

/// One clip's ball sums over its generated frames.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClipBall {
    /// True frames showing a ball.
    pub truth_ball: usize,
    /// Of those, generated frames showing one too.
    pub ball_found: usize,
    /// Ball-centre errors (px) of the frames where both show a ball.
    pub errors: Vec<f64>,
}

/// Intervals `[low, high]` holding [`INTERVAL`] of the ball scores over resamples of the
/// clips; `None` where no resample could be scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClipSpread {
    /// Resamples drawn.
    pub draws: usize,
    /// Clips each resample draws (the clips evaluated).
    pub clips: usize,
    /// Ball recall.
    pub ball_recall: Option<[f64; 2]>,
    /// Median ball-centre error (px).
    pub ball_error_median: Option<[f64; 2]>,
    /// 90th percentile of the ball-centre error (px).
    pub ball_error_p90: Option<[f64; 2]>,
}

/// The spread of the ball scores over `draws` resamples of `clips`, drawn from a generator
/// seeded with `seed` (the same clips and seed give the same intervals).
pub fn clip_spread(clips: &[ClipBall], draws: usize, seed: u64) -> ClipSpread {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut recall, mut median, mut p90) = (Vec::new(), Vec::new(), Vec::new());
    if !clips.is_empty() {
        let mut errors = Vec::new();
        for _ in 0..draws {
            let (mut truth, mut found) = (0, 0);
            errors.clear();
            for _ in 0..clips.len() {
                let clip = &clips[rng.random_range(0..clips.len())];
                truth += clip.truth_ball;
                found += clip.ball_found;
                errors.extend_from_slice(&clip.errors);
            }
            if truth > 0 {
                recall.push(found as f64 / truth as f64);
            }
            median.extend(quantile(&errors, 0.5));
            p90.extend(quantile(&errors, 0.9));
        }
    }
    let tail = (1.0 - INTERVAL) / 2.0;
    let interval = |v: &[f64]| Some([quantile(v, tail)?, quantile(v, 1.0 - tail)?]);
    ClipSpread {
        draws,
        clips: clips.len(),
        ball_recall: interval(&recall),
        ball_error_median: interval(&median),
        ball_error_p90: interval(&p90),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clip(truth_ball: usize, errors: &[f64]) -> ClipBall {
        ClipBall { truth_ball, ball_found: errors.len(), errors: errors.to_vec() }
    }

    #[test]
    fn alike_clips_leave_nothing_to_spread() {
        let clips = vec![clip(4, &[0.5, 1.0, 2.0]); 8];
        let s = clip_spread(&clips, 200, 0);
        assert_eq!((s.draws, s.clips), (200, 8));
        assert_eq!(s.ball_recall, Some([0.75, 0.75]));
        assert_eq!(s.ball_error_median, Some([1.0, 1.0]));
        // Every draw pools eight copies of the one clip's errors.
        let pooled: Vec<f64> = clips.iter().flat_map(|c| c.errors.clone()).collect();
        let p90 = quantile(&pooled, 0.9).unwrap();
        assert_eq!(s.ball_error_p90, Some([p90, p90]));
    }

    #[test]
    fn one_clip_that_lost_the_ball_spreads_the_tail_around_the_pooled_score() {
        // Nine clips place the ball within a pixel, one lost track of it by 20–30 px.
        let mut clips: Vec<ClipBall> = (0..9).map(|i| clip(10, &[0.1 * i as f64; 10])).collect();
        clips.push(clip(10, &[20.0, 22.0, 24.0, 26.0, 28.0, 30.0]));
        let pooled: Vec<f64> = clips.iter().flat_map(|c| c.errors.clone()).collect();
        let point = quantile(&pooled, 0.9).unwrap();
        let [low, high] = clip_spread(&clips, BOOTSTRAP_DRAWS, 0).ball_error_p90.unwrap();
        // Draws without the lost clip score under a pixel; draws with it twice score above 20.
        assert!(low < 1.0 && high > 20.0, "{low} {high}");
        assert!(low <= point && point <= high, "{low} {point} {high}");
        let [r_low, r_high] = clip_spread(&clips, BOOTSTRAP_DRAWS, 0).ball_recall.unwrap();
        assert!(r_low < 0.96 && r_high > 0.96 && r_high <= 1.0, "{r_low} {r_high}");
    }

    #[test]
    fn the_seed_fixes_the_draws_and_nothing_scored_gives_no_interval() {
        let clips: Vec<ClipBall> = (0..12).map(|i| clip(5, &[i as f64, 2.0 * i as f64])).collect();
        assert_eq!(clip_spread(&clips, 300, 7), clip_spread(&clips, 300, 7));
        assert_ne!(clip_spread(&clips, 300, 7), clip_spread(&clips, 300, 8));
        let empty = clip_spread(&[], 300, 0);
        assert_eq!((empty.ball_recall, empty.ball_error_p90), (None, None));
        let no_ball = clip_spread(&[clip(0, &[])], 50, 0);
        assert_eq!((no_ball.ball_recall, no_ball.ball_error_median), (None, None));
    }
}
