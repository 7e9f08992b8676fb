//! The step counts against closed forms written from the configs' widths alone.

use crate::dynamics::DynamicsKind;
use crate::genie::tests::{component_runs, reversible, tiny_dynamics, tiny_tokenizer};
use crate::genie::{assemble_genie, ActionSource};
use burn::tensor::Device;

/// One axial block on `rows = b·t·n` tokens of width `m`, FFN `d`: eight `M × M` projections,
/// the FFN, and the score and value matmuls over `n` tokens (per frame) and `t` frames (per
/// patch).
fn block(rows: usize, [n, t]: [usize; 2], m: usize, d: usize) -> usize {
    rows * (8 * m * m + 2 * m * d + 2 * n * m + 2 * t * m)
}

/// The LAM encoder's last block for its action slot alone on `[b, t, n]` tokens: keys and values
/// of every token, the rest (query, output, temporal attention, FFN) for the `b·t` slot rows.
fn slot_block([b, t, n]: [usize; 3], m: usize, d: usize) -> usize {
    b * t * n * 2 * m * m + b * t * (2 * m * m + 2 * n * m + 4 * m * m + 2 * t * m + 2 * m * d)
}

#[test]
fn tokenizer_step_is_three_passes_plus_code_distances() {
    let cfg = tiny_tokenizer(); // 16×16×3, patch 4: N = 16, P = 48; M 16, D 32, L 8, K 16
    let model = cfg.vq().unwrap().init(&Device::flex()).unwrap();
    let (b, t, n, p, m, d, l, k) = (3, 5, 16, 48, 16, 32, 8, 16);
    let rows = b * t * n;
    let encoder = rows * p * m + block(rows, [n, t], m, d) + rows * m * l;
    let decoder = rows * l * m + block(rows, [n, t], m, d) + rows * m * p;
    let expected = 3 * (encoder + decoder) + rows * k * l;
    assert_eq!(model.train_step_macs(b, t), expected as u64);
    assert_eq!(model.train_step_macs(2 * b, t), 2 * expected as u64, "linear in the batch");
}

#[test]
fn lam_step_counts_the_action_slot_the_decoder_and_the_doubled_input_of_frame_differences() {
    for frame_difference in [false, true] {
        let cfg =
            crate::lam::LamConfig { encoder_frame_difference: frame_difference, ..crate::lam::tests::tiny() };
        let model = cfg.init(&Device::flex()).unwrap();
        // N = 16, P = 48 (96 with frame differences into the encoder); M 16, D 32, L 8, K 4.
        let (b, t, n, p, m, d, l, k) = (2, 4, 16, 48, 16, 32, 8, 4);
        let p_in = if frame_difference { 2 * p } else { p };
        let rows_e = b * t * (n + 1);
        // One encoder block, run for the action slot only; the head for it alone.
        let encoder = rows_e * p_in * m + slot_block([b, t, n + 1], m, d) + b * t * m * l;
        let rows_d = b * (t - 1) * n;
        let decoder = rows_d * p * m
            + b * (t - 1) * l * m
            + rows_d * m * m
            + block(rows_d, [n, t - 1], m, d)
            + rows_d * m * p;
        // The decoder's `patch_up` reads raw patches: no input gradient.
        let expected = 3 * (encoder + decoder) - rows_d * p * m + b * (t - 1) * k * l;
        assert_eq!(model.train_step_macs(b, t), expected as u64, "frame differences {frame_difference}");
    }
}

#[test]
fn dynamics_step_counts_frozen_components_once_and_the_dynamics_three_times() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam) = component_runs(root.path());
    let device = Device::flex();
    let (genie, _) =
        assemble_genie(&tok, ActionSource::LamRun(&lam), &tiny_dynamics(DynamicsKind::MASKGIT), &device)
            .unwrap();
    // Tokenizer and LAM as in the tests above; dynamics M 16, D 32, V 16 codes, La 8.
    let (b, t, n, m, d, v, la) = (2, 4, 16, 16, 32, 16, 8);
    let rows = b * t * n;
    let tokenizer = rows * 48 * m + block(rows, [n, t], m, d) + rows * m * 8 + rows * 16 * 8;
    let rows_e = b * t * (n + 1);
    let lam_encoder = rows_e * 48 * m + slot_block([b, t, n + 1], m, d) + b * t * m * 8 + b * (t - 1) * 4 * 8;
    let dynamics = b * (t - 1) * la * m + rows_e * m * m + block(rows_e, [n + 1, t], m, d) + rows_e * m * v;
    let frozen = tokenizer + lam_encoder;
    assert_eq!(genie.train_step_macs(b, t, false), Some((frozen + 3 * dynamics) as u64));
    let lam_trained = 3 * (lam_encoder - b * (t - 1) * 4 * 8) + b * (t - 1) * 4 * 8;
    assert_eq!(
        genie.train_step_macs(b, t, true),
        Some((tokenizer + lam_trained + 3 * dynamics) as u64),
        "a co-trained LAM encoder"
    );
}

#[test]
fn a_reversible_backbone_is_not_counted() {
    let root = tempfile::tempdir().unwrap();
    let (tok, lam) = component_runs(root.path());
    let cfg = reversible(tiny_dynamics(DynamicsKind::MASKGIT));
    let (genie, _) = assemble_genie(&tok, ActionSource::LamRun(&lam), &cfg, &Device::flex()).unwrap();
    assert_eq!(genie.train_step_macs(2, 4, false), None);
}
