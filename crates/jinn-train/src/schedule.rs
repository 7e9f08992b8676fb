//! Learning-rate schedules as pure functions of the optimiser step, following Jasmine
//! (`get_lr_schedule`, built from optax's `linear_schedule`, `join_schedules` and
//! `warmup_cosine_decay_schedule`).
//!
//! **Step convention.** `step` is the number of optimiser updates already applied (0-based),
//! i.e. optax's update counter. The update that takes the model from step `s` to `s + 1` uses
//! `lr(s)`. So with Jasmine's default `init_lr = 0` the very first update has learning rate 0
//! (it only fills the Adam moments). A checkpoint written after `s` updates resumes with
//! `lr(s)`. Because the LR depends only on `(step, config)`, a checkpoint taken before the
//! decay phase can be resumed with a larger `total_steps` (the reason Jasmine uses WSD).
//!
//! **Piece boundaries** (`join_schedules` semantics: at a boundary the next piece starts, at
//! its own step 0):
//! * WSD: `s < W` warmup `init_lr + (max_lr − init_lr)·s/W`; `W ≤ s < S − D` constant
//!   `max_lr`; `s ≥ S − D` decay `max_lr + (decay_end − max_lr)·min(s − (S − D), D)/D`,
//!   reaching `decay_end` at `s = S` and held after. With `D = 0` the LR stays `max_lr`
//!   (optax returns the init value of a zero-length linear piece).
//! * Cosine: `s < W` the same warmup; `s ≥ W`:
//!   `decay_end + (max_lr − decay_end)·½(1 + cos(π·min(s − W, S − W)/(S − W)))`,
//!   reaching `decay_end` at `s = S` (warmup counted inside `S`, as in Jasmine).

use crate::error::{Result, TrainError};
use serde::{Deserialize, Serialize};

/// Which schedule shape to use (`lr_schedule` in Jasmine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleKind {
    /// Warmup, stable, linear decay (Jasmine's default).
    Wsd,
    /// Linear warmup then cosine decay to `decay_end` at the last step.
    Cos,
}

/// Learning-rate schedule settings (the `train.lr` config section). The total number of
/// steps comes from the run (`train.steps`), so it is passed to [`LrSchedule::lr`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LrSchedule {
    /// Schedule shape.
    pub kind: ScheduleKind,
    /// LR at step 0, the start of the warmup (0 allowed, Jasmine's default).
    pub init_lr: f64,
    /// Peak LR, reached at the end of the warmup.
    pub max_lr: f64,
    /// Final LR, reached at `total_steps`.
    pub decay_end: f64,
    /// Length of the linear warmup in steps.
    pub warmup_steps: u64,
    /// WSD only: length of the final linear decay (`wsd_decay_steps`).
    pub decay_steps: u64,
}

impl Default for LrSchedule {
    /// Jasmine's tokenizer defaults (WSD, 0 → 3e-4 over 10k steps, decay over the last 30k).
    fn default() -> Self {
        LrSchedule {
            kind: ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 3e-4,
            decay_end: 0.0,
            warmup_steps: 10_000,
            decay_steps: 30_000,
        }
    }
}

/// Field names used in error messages (the config path of this section).
const PREFIX: &str = "train.lr";

impl LrSchedule {
    /// Check the settings against a run of `total_steps` updates; errors name the field.
    pub fn validate(&self, total_steps: u64) -> Result<()> {
        let field = |f: &str| format!("{PREFIX}.{f}");
        for (name, v) in [("init_lr", self.init_lr), ("max_lr", self.max_lr), ("decay_end", self.decay_end)] {
            if !v.is_finite() || v < 0.0 {
                return Err(TrainError::config(field(name), format!("must be a finite number ≥ 0, got {v}")));
            }
        }
        if self.max_lr <= 0.0 {
            return Err(TrainError::config(field("max_lr"), "must be > 0"));
        }
        if total_steps == 0 {
            return Err(TrainError::config("train.steps", "must be ≥ 1"));
        }
        match self.kind {
            ScheduleKind::Wsd => {
                let needed = self.warmup_steps.checked_add(self.decay_steps);
                if needed.is_none_or(|n| n > total_steps) {
                    return Err(TrainError::config(
                        field("warmup_steps"),
                        format!(
                            "warmup_steps ({}) + decay_steps ({}) must be ≤ train.steps ({total_steps})",
                            self.warmup_steps, self.decay_steps
                        ),
                    ));
                }
            }
            ScheduleKind::Cos => {
                if self.warmup_steps >= total_steps {
                    return Err(TrainError::config(
                        field("warmup_steps"),
                        format!(
                            "cosine schedule needs warmup_steps ({}) < train.steps ({total_steps}) \
                             so that the decay phase is not empty",
                            self.warmup_steps
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The learning rate for the update applied at `step` (see the module docs for the
    /// convention). Call [`LrSchedule::validate`] once first; on an invalid config the
    /// result is unspecified but never NaN from a division by zero.
    pub fn lr(&self, step: u64, total_steps: u64) -> f64 {
        let warmup = self.warmup_steps;
        if step < warmup {
            return linear(self.init_lr, self.max_lr, step, warmup);
        }
        match self.kind {
            ScheduleKind::Wsd => {
                let decay_start = total_steps.saturating_sub(self.decay_steps);
                if step < decay_start {
                    self.max_lr
                } else {
                    linear(self.max_lr, self.decay_end, step - decay_start, self.decay_steps)
                }
            }
            ScheduleKind::Cos => {
                let span = total_steps.saturating_sub(warmup).max(1);
                let c = (step - warmup).min(span) as f64 / span as f64;
                let cosine = 0.5 * (1.0 + (std::f64::consts::PI * c).cos());
                self.decay_end + (self.max_lr - self.decay_end) * cosine
            }
        }
    }
}

/// optax `linear_schedule`: `from` at 0, `to` at `steps`, held after; a zero-length piece
/// stays at `from`.
fn linear(from: f64, to: f64, step: u64, steps: u64) -> f64 {
    if steps == 0 {
        return from;
    }
    let frac = 1.0 - step.min(steps) as f64 / steps as f64;
    (from - to) * frac + to
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wsd(init: f64, max: f64, end: f64, w: u64, d: u64) -> LrSchedule {
        LrSchedule {
            kind: ScheduleKind::Wsd,
            init_lr: init,
            max_lr: max,
            decay_end: end,
            warmup_steps: w,
            decay_steps: d,
        }
    }

    /// Naive reference written as optax's `join_schedules` over explicit pieces, in the
    /// other algebraic form (from + (to − from)·t), evaluated independently.
    fn naive_wsd(s: &LrSchedule, step: u64, total: u64) -> f64 {
        type Piece<'a> = (u64, Box<dyn Fn(u64) -> f64 + 'a>);
        let pieces: Vec<Piece> = vec![
            (
                0,
                Box::new(move |k| {
                    let t = (k as f64 / s.warmup_steps.max(1) as f64).min(1.0);
                    if s.warmup_steps == 0 {
                        s.init_lr
                    } else {
                        s.init_lr + (s.max_lr - s.init_lr) * t
                    }
                }),
            ),
            (s.warmup_steps, Box::new(move |_| s.max_lr)),
            (
                total - s.decay_steps,
                Box::new(move |k| {
                    if s.decay_steps == 0 {
                        return s.max_lr;
                    }
                    let t = (k as f64 / s.decay_steps as f64).min(1.0);
                    s.max_lr + (s.decay_end - s.max_lr) * t
                }),
            ),
        ];
        let mut out = (pieces[0].1)(step);
        for (boundary, f) in &pieces[1..] {
            if step >= *boundary {
                out = f(step - boundary);
            }
        }
        out
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-12)
    }

    #[test]
    fn wsd_boundaries_exact() {
        let s = wsd(0.0, 3e-4, 0.0, 10, 20);
        let total = 100;
        assert_eq!(s.lr(0, total), 0.0);
        assert_eq!(s.lr(5, total), 1.5e-4);
        assert_eq!(s.lr(10, total), 3e-4); // first step of the stable phase
        assert_eq!(s.lr(79, total), 3e-4); // last stable step
        assert_eq!(s.lr(80, total), 3e-4); // decay piece at its step 0
        assert!(close(s.lr(90, total), 1.5e-4));
        assert_eq!(s.lr(100, total), 0.0);
        assert_eq!(s.lr(1000, total), 0.0); // held after the end
    }

    #[test]
    fn wsd_matches_naive_reference_everywhere() {
        for (init, w, d, total) in [(0.0, 10, 20, 100), (1e-5, 0, 0, 7), (2e-5, 3, 4, 7), (0.0, 5, 95, 100)] {
            let s = wsd(init, 3e-4, 1e-6, w, d);
            s.validate(total).unwrap();
            for step in 0..total + 5 {
                let (a, b) = (s.lr(step, total), naive_wsd(&s, step, total));
                assert!(close(a, b), "step {step}: {a} vs {b} ({s:?}, total {total})");
            }
        }
    }

    #[test]
    fn wsd_pieces_are_monotone() {
        let s = wsd(1e-6, 1e-3, 1e-5, 50, 200);
        let total = 1000;
        let lrs: Vec<f64> = (0..=total).map(|k| s.lr(k, total)).collect();
        assert!(lrs[..=50].windows(2).all(|w| w[0] < w[1]), "warmup increases");
        assert!(lrs[50..=800].iter().all(|&v| v == 1e-3), "stable phase is max_lr");
        assert!(lrs[800..].windows(2).all(|w| w[0] > w[1]), "decay decreases");
        assert!(close(lrs[1000], 1e-5));
    }

    #[test]
    fn wsd_resume_with_more_steps_agrees_before_decay() {
        let s = wsd(0.0, 3e-4, 0.0, 10, 20);
        for step in 0..80 {
            assert_eq!(s.lr(step, 100), s.lr(step, 500));
        }
    }

    #[test]
    fn cosine_boundaries_and_reference() {
        let s = LrSchedule {
            kind: ScheduleKind::Cos,
            init_lr: 0.0,
            max_lr: 1e-3,
            decay_end: 1e-5,
            warmup_steps: 10,
            decay_steps: 0,
        };
        let total = 110;
        s.validate(total).unwrap();
        assert_eq!(s.lr(0, total), 0.0);
        assert_eq!(s.lr(10, total), 1e-3);
        assert!(close(s.lr(60, total), (1e-3 + 1e-5) / 2.0));
        assert!(close(s.lr(110, total), 1e-5));
        assert!(close(s.lr(500, total), 1e-5));
        // optax form: peak·((1 − α)·cos + α) with α = end/peak.
        let alpha = 1e-5 / 1e-3;
        for step in 10..=total {
            let c = 0.5 * (1.0 + (std::f64::consts::PI * (step - 10) as f64 / 100.0).cos());
            let optax = 1e-3 * ((1.0 - alpha) * c + alpha);
            assert!((s.lr(step, total) - optax).abs() < 1e-18, "step {step}");
        }
        let lrs: Vec<f64> = (10..=total).map(|k| s.lr(k, total)).collect();
        assert!(lrs.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn invalid_configs_name_the_field() {
        let msg = |s: LrSchedule, total| s.validate(total).unwrap_err().to_string();
        assert!(msg(wsd(0.0, 3e-4, 0.0, 60, 50), 100).contains("train.lr.warmup_steps"));
        assert!(msg(wsd(-1.0, 3e-4, 0.0, 1, 1), 100).contains("train.lr.init_lr"));
        assert!(msg(wsd(0.0, 0.0, 0.0, 1, 1), 100).contains("train.lr.max_lr"));
        assert!(msg(wsd(0.0, 3e-4, f64::NAN, 1, 1), 100).contains("train.lr.decay_end"));
        assert!(msg(wsd(0.0, 3e-4, 0.0, 0, 0), 0).contains("train.steps"));
        assert!(msg(wsd(0.0, 3e-4, 0.0, u64::MAX, 2), 100).contains("train.lr.warmup_steps"));
        let cos = LrSchedule { kind: ScheduleKind::Cos, warmup_steps: 100, ..LrSchedule::default() };
        assert!(msg(cos, 100).contains("train.lr.warmup_steps"));
        wsd(0.0, 3e-4, 0.0, 50, 50).validate(100).unwrap();
    }

    #[test]
    fn serde_round_trip_and_unknown_field() {
        let s = LrSchedule::default();
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"kind\":\"wsd\""));
        assert_eq!(serde_json::from_str::<LrSchedule>(&text).unwrap(), s);
        let err = serde_json::from_str::<LrSchedule>(r#"{"max_lrr": 1.0}"#).unwrap_err().to_string();
        assert!(err.contains("max_lrr"), "{err}");
    }
}
