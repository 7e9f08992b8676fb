//! A deterministic stand-in world model for tests, the browser check and the server benchmark:
//! the arrows roll the frame by one pixel (wrapping around), "fire" inverts it.
//!
//! Start frames are a seeded pseudo-random pattern, so every step visibly changes the frame and
//! different actions give different frames. It counts how many calls overlap, so tests can check
//! that the server serialises inference.

use crate::model::{
    ActionInfo, Frame, ModelError, ModelInfo, SplitInfo, StartSource, WorldModel, WorldState,
};
use jinn_data::FrameShape;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The fake model's actions in id order: (label, key).
pub const FAKE_ACTIONS: [(&str, &str); 5] =
    [("left", "ArrowLeft"), ("right", "ArrowRight"), ("up", "ArrowUp"), ("down", "ArrowDown"), ("fire", " ")];

/// Episodes in the fake model's "train" and "val" splits, and frames per episode.
const FAKE_SPLITS: [(&str, usize); 2] = [("train", 8), ("val", 2)];
const FAKE_EPISODE_FRAMES: usize = 64;

/// The fake world model.
pub struct FakeWorld {
    info: ModelInfo,
    /// Extra time each step takes (simulated inference).
    step_delay: Duration,
    /// Seed of the next [`StartSource::Sample`].
    next_sample: AtomicU64,
    /// Calls in progress now, and the most ever seen at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// The fake model's session state.
#[derive(Clone)]
struct FakeState {
    /// The current frame `[H, W, C]`.
    frame: Frame,
}

impl FakeWorld {
    /// A fake model of `shape` frames whose steps take `step_delay` longer than the pixel work.
    pub fn new(shape: FrameShape, step_delay: Duration) -> Self {
        let actions = FAKE_ACTIONS
            .iter()
            .enumerate()
            .map(|(i, (label, key))| ActionInfo {
                id: i as u32,
                label: label.to_string(),
                key: Some(key.to_string()),
                description: Some(match *label {
                    "fire" => "invert the colours".to_string(),
                    dir => format!("roll the frame one pixel {dir}"),
                }),
            })
            .collect();
        let splits =
            FAKE_SPLITS.iter().map(|(n, e)| SplitInfo { name: n.to_string(), episodes: *e }).collect();
        FakeWorld {
            info: ModelInfo { name: "fake".into(), frame: shape, actions, max_start_frames: 4, splits },
            step_delay,
            next_sample: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        }
    }

    /// The most model calls that ever ran at the same time.
    pub fn max_concurrent_calls(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// The start frame for `seed`: `[H, W, C]` pseudo-random bytes (SplitMix64 of the index).
    pub fn pattern(shape: FrameShape, seed: u64) -> Frame {
        let pixels = (0..shape.frame_bytes() as u64)
            .map(|i| (splitmix64(seed.wrapping_mul(0x1000_0000_01b3) ^ i) >> 56) as u8)
            .collect();
        Frame { shape, pixels }
    }

    /// Run `f` as one model call, tracking overlap and adding the simulated delay.
    fn call<T>(&self, f: impl FnOnce() -> T) -> T {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if !self.step_delay.is_zero() {
            std::thread::sleep(self.step_delay);
        }
        let out = f();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `frame` rolled by (`dy`, `dx`) pixels with wrap-around: output pixel (y, x) is input pixel
/// (y − dy, x − dx).
fn roll(frame: &Frame, dy: isize, dx: isize) -> Frame {
    let FrameShape { height: h, width: w, channels: c } = frame.shape;
    let mut out = vec![0u8; frame.pixels.len()]; // [H, W, C]
    for y in 0..h {
        let sy = (y as isize - dy).rem_euclid(h as isize) as usize;
        for x in 0..w {
            let sx = (x as isize - dx).rem_euclid(w as isize) as usize;
            out[(y * w + x) * c..][..c].copy_from_slice(&frame.pixels[(sy * w + sx) * c..][..c]);
        }
    }
    Frame { shape: frame.shape, pixels: out }
}

impl WorldModel for FakeWorld {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn start_frames(&self, source: &StartSource) -> Result<Vec<Frame>, ModelError> {
        let seed = match source {
            StartSource::Sample => self.next_sample.fetch_add(1, Ordering::SeqCst),
            StartSource::Dataset { split, episode, frame } => {
                let (index, (_, episodes)) =
                    FAKE_SPLITS.iter().enumerate().find(|(_, (n, _))| n == split).ok_or_else(|| {
                        ModelError::NotFound(format!(
                            "no split \"{split}\"; the fake model has train and val"
                        ))
                    })?;
                if episode >= episodes {
                    return Err(ModelError::NotFound(format!(
                        "episode {episode} of split {split}: it has {episodes} episodes"
                    )));
                }
                if *frame >= FAKE_EPISODE_FRAMES {
                    return Err(ModelError::NotFound(format!(
                        "frame {frame} of episode {episode}: episodes have {FAKE_EPISODE_FRAMES} frames"
                    )));
                }
                1_000_000 + (index * 1000 + episode) as u64 * 100 + *frame as u64
            }
        };
        Ok(vec![FakeWorld::pattern(self.info.frame, seed)])
    }

    fn start(&self, frames: &[Frame]) -> Result<WorldState, ModelError> {
        self.call(|| {
            let last = frames.last().ok_or_else(|| ModelError::BadInput("no start frames".into()))?;
            Ok(WorldState::new(FakeState { frame: last.clone() }))
        })
    }

    fn step(&self, state: &mut WorldState, action: u32) -> Result<Frame, ModelError> {
        self.call(|| {
            let s = state.expect_mut::<FakeState>()?;
            s.frame = match action {
                0 => roll(&s.frame, 0, -1),
                1 => roll(&s.frame, 0, 1),
                2 => roll(&s.frame, -1, 0),
                3 => roll(&s.frame, 1, 0),
                4 => Frame { shape: s.frame.shape, pixels: s.frame.pixels.iter().map(|v| 255 - v).collect() },
                a => {
                    return Err(ModelError::BadInput(format!("unknown action {a}; the fake model has 0..5")))
                }
            };
            Ok(s.frame.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_move_pixels_as_documented() {
        let model = FakeWorld::new(FrameShape::rgb(3, 4), Duration::ZERO);
        let start = FakeWorld::pattern(FrameShape::rgb(3, 4), 7);
        let px = |f: &Frame, y: usize, x: usize| f.pixels[(y * 4 + x) * 3..][..3].to_vec();
        let mut state = model.start(std::slice::from_ref(&start)).unwrap();
        let right = model.step(&mut state, 1).unwrap();
        assert_eq!(px(&right, 1, 1), px(&start, 1, 0));
        assert_eq!(px(&right, 2, 0), px(&start, 2, 3), "wraps around");
        let down = model.step(&mut state, 3).unwrap();
        assert_eq!(px(&down, 0, 1), px(&start, 2, 0));
        let left = model.step(&mut state, 0).unwrap();
        let up = model.step(&mut state, 2).unwrap();
        assert_eq!(up, start, "right, down, left, up returns to the start");
        assert_eq!(left, roll(&start, 1, 0));
        let inv = model.step(&mut state, 4).unwrap();
        assert!(inv.pixels.iter().zip(&start.pixels).all(|(a, b)| a + b == 255));
        assert!(model.step(&mut state, 5).is_err());
    }

    #[test]
    fn start_sources_are_deterministic_and_checked() {
        let model = FakeWorld::new(FrameShape::rgb(8, 8), Duration::ZERO);
        let a = model.start_frames(&StartSource::Sample).unwrap();
        let b = model.start_frames(&StartSource::Sample).unwrap();
        assert_ne!(a, b, "successive samples differ");
        let ds = |split: &str, episode, frame| {
            model.start_frames(&StartSource::Dataset { split: split.into(), episode, frame })
        };
        assert_eq!(ds("val", 1, 3).unwrap(), ds("val", 1, 3).unwrap());
        assert_ne!(ds("val", 1, 3).unwrap(), ds("train", 1, 3).unwrap());
        assert!(matches!(ds("test", 0, 0), Err(ModelError::NotFound(_))));
        assert!(matches!(ds("val", 2, 0), Err(ModelError::NotFound(_))));
        assert!(matches!(ds("val", 0, 64), Err(ModelError::NotFound(_))));
    }
}
