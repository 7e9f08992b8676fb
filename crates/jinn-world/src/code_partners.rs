//! Which recorded action each latent action code stands for, read off how often the LAM's
//! codes and a dataset's recorded actions meet; the play page names its buttons by it, and
//! dynamics training can ground the LAM's codes in it (`model.ground_lam_codes`).
//!
//! A code's *partner* is the recorded action most of its transitions carry; the code stands
//! for it *clearly* when at least [`CLEAR_SHARE`] of them do. Where several codes clearly
//! stand for one action, the one with the larger share *leads* it. Shares are compared as the
//! rule of succession estimates them, `(n + 1) / (N + 2)`, so a rare code (3 of 3 transitions)
//! does not lead a frequent one (1,095 of 1,096): a dynamics model learns what a code does
//! from the transitions that carry it, and a code seen three times barely steers.
//!
//! **Grounding.** A LAM infers a code from what changed between two frames, so an action that
//! changes nothing (left, with the paddle against the left wall) gets the code of doing
//! nothing. A dynamics model trained on those codes never sees the "left" code at the wall,
//! and a player holding left there asks it for something it has never seen: the paddle slides
//! into the wall and is gone. Grounded, a transition whose recorded action has a leading code,
//! but whose LAM code clearly stands for another action, trains with the leading code
//! instead; every other transition keeps the LAM's code. A code that stands for no action
//! clearly carries what the LAM read off the frames besides the action; rollouts from real
//! clips send it in the same moments, so training keeps it too. An action is grounded only where the
//! LAM names it: the codes that clearly stand for it must carry at least [`NAMED_SHARE`] of its
//! transitions. Otherwise its leader is a code the LAM seldom gives it (one `fire` in a
//! thousand transitions, say), and relabelling would train the dynamics on a code that
//! inference, which reads the LAM's codes off the frames, all but never produces. It needs data
//! that record actions and is not in Jasmine, which trains on the LAM's codes alone.

use crate::nmi::{code_action_counts, pair_transitions};
use crate::{frames_to_unit, Genie};
use burn::tensor::Device;
use jinn_data::dataset::Dataset;
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::FrameShape;
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// A code is "clearly" an action when at least this share of its transitions carry it.
pub const CLEAR_SHARE: f64 = 0.6;

/// An action is grounded only when the codes that clearly stand for it carry at least this
/// share of its transitions.
pub const NAMED_SHARE: f64 = 0.5;

/// The recorded action a latent code stands for, from its row of co-occurrence counts.
#[derive(Debug, Clone, PartialEq)]
pub struct CodePartner {
    /// Most frequent recorded action of the code's transitions.
    pub action: usize,
    /// Its share of the code's transitions.
    pub share: f64,
    /// Transitions the code was seen in.
    pub transitions: usize,
}

impl CodePartner {
    /// Whether the code stands for its partner clearly (share ≥ [`CLEAR_SHARE`]).
    pub fn is_clear(&self) -> bool {
        self.share >= CLEAR_SHARE
    }

    /// The share by which codes of one partner are ranked, `(n + 1) / (N + 2)` for `n` of `N`
    /// transitions carrying the partner, then the larger `N` on a tie.
    fn rank(&self) -> (f64, usize) {
        let n = (self.share * self.transitions as f64).round();
        ((n + 1.0) / (self.transitions as f64 + 2.0), self.transitions)
    }
}

/// The partner of each of `codes` latent codes: `counts[c][a]` is how often code `c` met
/// recorded action `a` (rows or columns may be missing: never seen). `None` for codes never
/// seen.
pub fn code_partners(counts: &[Vec<usize>], codes: usize) -> Vec<Option<CodePartner>> {
    (0..codes)
        .map(|c| {
            let row = counts.get(c)?;
            let transitions: usize = row.iter().sum();
            let (action, &n) = row.iter().enumerate().max_by_key(|&(a, &n)| (n, std::cmp::Reverse(a)))?;
            (transitions > 0).then(|| CodePartner {
                action,
                share: n as f64 / transitions as f64,
                transitions,
            })
        })
        .collect()
}

/// For each code, whether it leads its partner action: it stands for it clearly and ranks
/// first among the codes that do (ties go to the lower code).
pub fn leading_codes(partners: &[Option<CodePartner>]) -> Vec<bool> {
    let clear = |p: &Option<CodePartner>| p.as_ref().filter(|p| p.is_clear()).cloned();
    partners
        .iter()
        .enumerate()
        .map(|(c, p)| {
            let Some(p) = clear(p) else { return false };
            partners.iter().enumerate().filter_map(|(o, q)| clear(q).map(|q| (o, q))).all(|(o, q)| {
                let (mine, theirs) = (p.rank(), q.rank());
                q.action != p.action || o == c || theirs < mine || (theirs == mine && c < o)
            })
        })
        .collect()
}

/// The grounding of LAM codes in recorded actions (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeGrounding {
    /// For each recorded action, the code that leads it.
    pub code_for_action: Vec<Option<usize>>,
    /// For each code, the action it clearly stands for.
    pub action_of_code: Vec<Option<usize>>,
}

impl CodeGrounding {
    /// The grounding of `codes` codes over `actions` recorded actions from their
    /// co-occurrence `counts` (as for [`code_partners`]); an action whose clear codes carry
    /// less than [`NAMED_SHARE`] of its transitions has no leading code here.
    pub fn from_counts(counts: &[Vec<usize>], codes: usize, actions: usize) -> Self {
        let partners = code_partners(counts, codes);
        let leads = leading_codes(&partners);
        let action_of_code: Vec<Option<usize>> =
            partners.iter().map(|p| p.as_ref().filter(|p| p.is_clear()).map(|p| p.action)).collect();
        let count = |c: usize, a: usize| counts.get(c).and_then(|row| row.get(a)).copied().unwrap_or(0);
        let named = |a: usize| {
            let all: usize = (0..counts.len()).map(|c| count(c, a)).sum();
            let by_clear: usize = (0..counts.len())
                .filter(|&c| action_of_code.get(c) == Some(&Some(a)))
                .map(|c| count(c, a))
                .sum();
            by_clear as f64 >= NAMED_SHARE * all as f64
        };
        let mut code_for_action = vec![None; actions];
        for (c, p) in partners.iter().enumerate() {
            if let Some(p) = p.as_ref().filter(|p| leads[c] && named(p.action)) {
                if let Some(slot) = code_for_action.get_mut(p.action) {
                    *slot = Some(c);
                }
            }
        }
        CodeGrounding { code_for_action, action_of_code }
    }

    /// The code a transition trains with: the LAM gave it `code`, the data record `action`.
    pub fn ground(&self, code: usize, action: usize) -> usize {
        let stands_for = self.action_of_code.get(code).copied().flatten();
        match self.code_for_action.get(action).copied().flatten() {
            Some(lead) if stands_for.is_some_and(|other| other != action) => lead,
            _ => code,
        }
    }

    /// `code → action` for each action with a leading code, e.g. `left → 2, right → 5`.
    pub fn describe(&self, names: &[String]) -> String {
        let name = |a: usize| names.get(a).cloned().unwrap_or_else(|| format!("action {a}"));
        let pairs: Vec<String> = self
            .code_for_action
            .iter()
            .enumerate()
            .filter_map(|(a, c)| c.map(|c| format!("{} → code {c}", name(a))))
            .collect();
        if pairs.is_empty() {
            "no recorded action has a leading code".into()
        } else {
            pairs.join(", ")
        }
    }
}

/// Clips of at most this many frames (and at most the training clip) are read to pair codes
/// with actions.
pub const PARTNER_CLIP_FRAMES: usize = 16;
/// Clips read to pair codes with actions (960 transitions at 16 frames).
pub const PARTNER_CLIPS: usize = 64;

/// How often each of `genie`'s LAM codes met each recorded action over [`PARTNER_CLIPS`]
/// clips of `min(trained, PARTNER_CLIP_FRAMES)` frames of the split at `split` (frames of
/// shape `frame`; `trained` is the clip length the models were trained on), in the order of a
/// loader at seed 0: `counts[code][action]`. `None` when the model's actions are not latent,
/// the split holds no clip that long, or the data record no single action per frame. The play
/// page and grounded training read the same clips, so they agree.
pub fn lam_code_counts(
    genie: &Genie,
    split: &Path,
    frame: FrameShape,
    trained: usize,
    device: &Device,
) -> Result<Option<Vec<Vec<usize>>>> {
    let clip_frames = trained.clamp(2, PARTNER_CLIP_FRAMES);
    if genie.lam.is_none() {
        return Ok(None);
    }
    let dataset = Arc::new(Dataset::open_for_model(split, clip_frames, frame)?);
    if dataset.records().is_empty() {
        return Ok(None);
    }
    let batch_size = 4;
    let cfg = LoaderConfig { batch_size, seq_len: clip_frames, seed: 0, threads: 0, ..Default::default() };
    let mut loader = Loader::new(dataset, cfg)?;
    let (mut codes, mut actions) = (Vec::new(), Vec::new());
    for _ in 0..PARTNER_CLIPS / batch_size {
        let batch = loader
            .next()
            .ok_or_else(|| TrainError::config("data", format!("{}: no clip to read", split.display())))??;
        let Some(recorded) = batch.actions.as_ref().filter(|_| batch.action_dims == 1) else {
            return Ok(None);
        };
        let (b, s) = (batch.batch_size, batch.seq_len);
        let videos = frames_to_unit(&batch.videos, [b, s, frame.height, frame.width, frame.channels], device);
        let (_, ids) = genie.latent_actions(videos, None).map_err(crate::data::model_err)?;
        let Some(ids) = ids else { return Ok(None) };
        let ids: Vec<i64> = ids.try_into_vec_as::<i64>().expect("integer tensor data"); // [b·(s−1)]
        pair_transitions(&ids, recorded, b, s, &mut codes, &mut actions);
    }
    Ok(Some(code_action_counts(&codes, &actions)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rare_code_does_not_lead_a_frequent_one_and_ties_go_to_the_code_seen_more() {
        // Code 0 is left in 3 of 3 transitions, code 2 in 120 of 121; code 1 never seen.
        let counts = vec![vec![0, 3, 0, 0], vec![], vec![1, 120, 0, 0]];
        let partners = code_partners(&counts, 3);
        assert_eq!(leading_codes(&partners), [false, false, true]);
        // Equal shares: the code seen more often leads; equal counts too: the lower code.
        let counts = vec![vec![0, 4, 0, 0], vec![0, 40, 0, 0]];
        assert_eq!(leading_codes(&code_partners(&counts, 2)), [false, true]);
        let counts = vec![vec![0, 8, 2, 0], vec![0, 8, 2, 0]];
        assert_eq!(leading_codes(&code_partners(&counts, 2)), [true, false]);
        // A share under CLEAR_SHARE leads nothing.
        let counts = vec![vec![41, 59, 0, 0]];
        assert_eq!(leading_codes(&code_partners(&counts, 1)), [false]);
    }

    #[test]
    fn grounding_relabels_only_transitions_whose_code_stands_for_another_action() {
        // Actions noop, left, right, fire. Code 0: noop 70 %; code 1: left (rare, leads
        // nothing); code 2: left; code 3: right; code 4: no clear partner.
        let counts = vec![
            vec![70, 10, 10, 10],
            vec![0, 5, 0, 0],
            vec![0, 500, 0, 0],
            vec![0, 0, 400, 1],
            vec![30, 0, 0, 30],
        ];
        let g = CodeGrounding::from_counts(&counts, 5, 4);
        assert_eq!(g.code_for_action, [Some(0), Some(2), Some(3), None]);
        assert_eq!(g.action_of_code, [Some(0), Some(1), Some(1), Some(2), None]);
        // Left at a wall: the LAM saw nothing move (code 0, noop) and trains as left (code 2).
        assert_eq!(g.ground(0, 1), 2);
        assert_eq!(g.ground(2, 0), 0);
        // A code that stands for no action keeps what the LAM read off the frames.
        assert_eq!(g.ground(4, 2), 4);
        assert_eq!(g.ground(4, 0), 4);
        // A code that stands for the recorded action stays, the rare one too.
        assert_eq!(g.ground(2, 1), 2);
        assert_eq!(g.ground(1, 1), 1);
        // An action without a leading code keeps the LAM's code.
        assert_eq!(g.ground(4, 3), 4);
        assert_eq!(g.ground(0, 3), 0);
        // A code the counts never met stands for nothing; an action they never met has no
        // leading code.
        assert_eq!(g.ground(9, 1), 9);
        assert_eq!(g.ground(2, 9), 2);
        let names: Vec<String> = ["noop", "left", "right", "fire"].iter().map(|s| s.to_string()).collect();
        assert_eq!(g.describe(&names), "noop → code 0, left → code 2, right → code 3");
    }

    #[test]
    fn an_action_the_lam_seldom_names_by_its_clear_codes_is_not_grounded() {
        // Code 0 met fire once and nothing else: it stands for fire clearly and leads it (the
        // play page names it so), but fire's other 180 transitions carry code 1 (noop).
        let counts = vec![vec![0, 0, 0, 1], vec![400, 0, 0, 180], vec![0, 300, 0, 0]];
        assert_eq!(leading_codes(&code_partners(&counts, 3)), [true, true, true]);
        let g = CodeGrounding::from_counts(&counts, 3, 4);
        assert_eq!(g.code_for_action, [Some(1), Some(2), None, None]);
        // Fire keeps the LAM's code, whichever it is.
        assert_eq!(g.ground(1, 3), 1);
        assert_eq!(g.ground(0, 3), 0);
        // Exactly half of an action's transitions on its clear codes is enough.
        let counts = vec![vec![0, 50, 0, 0], vec![90, 50, 0, 0]];
        let g = CodeGrounding::from_counts(&counts, 2, 4);
        assert_eq!(g.code_for_action, [Some(1), Some(0), None, None]);
        assert_eq!(g.ground(1, 1), 0);
    }
}
