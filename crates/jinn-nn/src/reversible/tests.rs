//! Tests of the reversible blocks and the engine against references: exact round trips,
//! standard autodiff, finite differences and a naive Jacobian determinant.

use crate::test_util::to_vec;
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::nn::Linear;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor, TensorData};

use super::*;
use crate::axial::{AxialBlock, AxialBlockConfig};
use crate::init;

fn randn<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn roundtrip_error<const D: usize, B: ReversibleBlock<D>>(blocks: &[B], x: Tensor<D>) -> f32 {
    let y = forward_standard(blocks, x.clone());
    let back = blocks.iter().rev().fold(y, |h, b| b.inverse(h));
    max_abs_diff(&to_vec(back), &to_vec(x))
}

#[test]
fn inverse_of_forward_is_identity_up_to_depth_64() {
    let device = Device::flex();
    let cfg = FfnCouplingConfig::new(8, 16);
    for depth in [1, 2, 4, 16, 64] {
        let x = randn([4, 3, 8], &device);
        let add = roundtrip_error(&cfg.init_additive(depth, &device).unwrap(), x.clone());
        assert!(add < 1e-5, "additive depth {depth}: {add}");
        let aff = roundtrip_error(&cfg.init_affine(depth, &device).unwrap(), x);
        assert!(aff < 1e-5, "affine depth {depth}: {aff}");
    }
}

#[test]
fn attention_blocks_invert() {
    let device = Device::flex();
    let causal = ReversibleCausalConfig::new(8, 16, 2).init_stack(16, &device).unwrap();
    let e = roundtrip_error(&causal, randn([2, 5, 8], &device));
    assert!(e < 1e-5, "causal: {e}");
    let axial = ReversibleAxialConfig::new(8, 16, 2).init_stack(8, &device).unwrap();
    let e = roundtrip_error(&axial, randn([2, 3, 4, 8], &device));
    assert!(e < 1e-5, "axial: {e}");
}

#[test]
fn odd_width_and_bad_bound_are_errors() {
    let device = Device::flex();
    assert!(FfnCouplingConfig::new(7, 8).init_additive(1, &device).is_err());
    assert!(FfnCouplingConfig::new(8, 8).with_bound(0.0).init_affine(1, &device).is_err());
    assert!(ReversibleCausalConfig::new(8, 16, 3).init_stack(1, &device).is_err(), "3 heads on 4 channels");
}

/// Every parameter gradient of `module` found in `grads`, in visiting order.
fn grads_of<M: Module>(module: &M, grads: &GradientsParams) -> Vec<(ParamId, Vec<f32>)> {
    struct Collect<'a> {
        grads: &'a GradientsParams,
        out: Vec<(ParamId, Vec<f32>)>,
    }
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let g = self.grads.get::<D>(param.id).expect("missing parameter gradient");
            self.out.push((param.id, to_vec(g)));
        }
    }
    let mut c = Collect { grads, out: Vec::new() };
    module.visit(&mut c);
    c.out
}

/// Largest |gradient| over all parameters.
fn global_scale(grads: &[(ParamId, Vec<f32>)]) -> f32 {
    grads.iter().flat_map(|(_, g)| g.iter()).fold(0.0f32, |m, v| m.max(v.abs()))
}

/// max|a − b| / max(max|b|, floor) ≤ tol, tensor by tensor. The floor (a hundredth of the
/// largest gradient of the model) matters only for gradients that are zero in exact arithmetic
/// (attention key biases: softmax ignores them), where f32 leaves pure rounding noise.
fn assert_close_floor(what: &str, a: &[f32], b: &[f32], tol: f32, floor: f32) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(floor).max(1e-12);
    let rel = max_abs_diff(a, b) / scale;
    assert!(rel <= tol, "{what}: relative difference {rel:e} > {tol:e}");
}

/// max|a − b| / max|b| ≤ tol.
fn assert_close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-12);
    let rel = max_abs_diff(a, b) / scale;
    assert!(rel <= tol, "{what}: relative difference {rel:e} > {tol:e}");
}

/// Stem `Linear(6 → M)`, the blocks, head `Linear(M → 3)`, MSE loss.
struct Setup<B> {
    stem: Linear,
    blocks: Vec<B>,
    head: Linear,
}

impl<B: Module> Setup<B> {
    fn params(&self) -> (Linear, Vec<B>, Linear) {
        (self.stem.clone(), self.blocks.clone(), self.head.clone())
    }
}

fn loss_of<const D: usize>(head: &Linear, y: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    (head.forward(y) - target).powi_scalar(2).mean()
}

/// Standard autodiff: (parameter grads, input grad).
fn standard_step<const D: usize, B: Block<D>>(
    s: &Setup<B>,
    x: Tensor<D>,
    target: Tensor<D>,
) -> (Vec<(ParamId, Vec<f32>)>, Vec<f32>) {
    let x = x.require_grad();
    let y = forward_standard(&s.blocks, s.stem.forward(x.clone()));
    let mut g = loss_of(&s.head, y, target).backward();
    let gx = to_vec(x.grad(&g).unwrap());
    let gp = GradientsParams::from_module(&mut g, &s.params());
    (grads_of(&s.params(), &gp), gx)
}

/// The engine between an autodiff stem and head: (parameter grads, input grad).
fn engine_step<const D: usize, B: ReversibleBlock<D>>(
    s: &Setup<B>,
    engine: &mut Engine,
    x: Tensor<D>,
    target: Tensor<D>,
    stored_backward: bool,
) -> (Vec<(ParamId, Vec<f32>)>, Vec<f32>) {
    let x = x.require_grad();
    let h = s.stem.forward(x.clone());
    let (y, tape) = engine.forward(&s.blocks, h.clone()).unwrap();
    let mut g = loss_of(&s.head, y.clone(), target).backward();
    let gy = y.grad_remove(&mut g).unwrap();
    let mut gp = GradientsParams::from_module(&mut g, &s.head);
    let gh = if stored_backward {
        engine.backward_stored(&s.blocks, tape, gy, &mut gp).unwrap()
    } else {
        engine.backward(&s.blocks, tape, gy, &mut gp).unwrap()
    };
    let mut g = backprop_into(h, gh);
    accumulate(&mut gp, &s.stem, &mut g);
    let gx = to_vec(x.grad(&g).unwrap());
    (grads_of(&s.params(), &gp), gx)
}

fn compare_with_standard<const D: usize, B: ReversibleBlock<D>>(
    name: &str,
    blocks: Vec<B>,
    x_shape: [usize; D],
    device: &Device,
) {
    let mut y_shape = x_shape;
    y_shape[D - 1] = 3;
    let s = Setup { stem: init::linear(6, 8, device), blocks, head: init::linear(8, 3, device) };
    let (x, target) = (randn(x_shape, device), randn(y_shape, device));
    let (want_p, want_x) = standard_step(&s, x.clone(), target.clone());
    // Reconstructed activations carry the rounding of one inverse per block, so their gradients
    // get a looser bound than stored ones: over unseeded draws the axial stack's input gradient
    // reached 1.15e-4 once on CI. A wrong gradient is off by far more than either.
    for (mode, tol) in [(Mode::Reconstruct, 5e-4), (Mode::StoreInputs, 1e-4)] {
        let mut engine = Engine::new(mode, MonitorConfig { every: 0, threshold: 1e-3 });
        let (got_p, got_x) = engine_step(&s, &mut engine, x.clone(), target.clone(), false);
        assert_close(&format!("{name} {mode:?} input grad"), &got_x, &want_x, tol);
        assert_eq!(got_p.len(), want_p.len(), "{name}: parameter count");
        let floor = 1e-2 * global_scale(&want_p);
        for (i, ((ig, g), (iw, w))) in got_p.iter().zip(&want_p).enumerate() {
            assert_eq!(ig, iw);
            assert_close_floor(&format!("{name} {mode:?} param #{i}"), g, w, tol, floor);
        }
    }
}

#[test]
fn engine_gradients_equal_standard_autodiff_ffn_couplings() {
    let device = Device::flex().autodiff();
    let cfg = FfnCouplingConfig::new(8, 16);
    compare_with_standard("additive", cfg.init_additive(6, &device).unwrap(), [3, 4, 6], &device);
    compare_with_standard("affine", cfg.init_affine(6, &device).unwrap(), [3, 4, 6], &device);
}

#[test]
fn engine_gradients_equal_standard_autodiff_attention_blocks() {
    let device = Device::flex().autodiff();
    let causal = ReversibleCausalConfig::new(8, 16, 2).init_stack(4, &device).unwrap();
    compare_with_standard("causal", causal, [2, 5, 6], &device);
    let axial = ReversibleAxialConfig::new(8, 16, 2).init_stack(3, &device).unwrap();
    compare_with_standard("axial", axial, [2, 3, 4, 6], &device);
}

#[test]
fn engine_works_on_a_gradient_checkpointing_device() {
    let device = Device::flex().autodiff().gradient_checkpointing();
    let cfg = FfnCouplingConfig::new(8, 16);
    compare_with_standard("additive/balanced", cfg.init_additive(3, &device).unwrap(), [3, 6], &device);
}

#[test]
fn stored_input_mode_matches_standard_for_plain_axial_blocks() {
    let device = Device::flex().autodiff();
    let blocks: Vec<AxialBlock> =
        (0..3).map(|_| AxialBlockConfig::new(8, 16, 2).init(&device).unwrap()).collect();
    let s = Setup { stem: init::linear(6, 8, &device), blocks, head: init::linear(8, 3, &device) };
    let (x, target) = (randn([2, 3, 4, 6], &device), randn([2, 3, 4, 3], &device));
    let (want_p, want_x) = standard_step(&s, x.clone(), target.clone());

    let x = x.require_grad();
    let h = s.stem.forward(x.clone());
    let mut engine = Engine::new(Mode::StoreInputs, MonitorConfig::default());
    let (y, tape) = engine.forward(&s.blocks, h.clone()).unwrap();
    let mut g = loss_of(&s.head, y.clone(), target).backward();
    let gy = y.grad_remove(&mut g).unwrap();
    let mut gp = GradientsParams::from_module(&mut g, &s.head);
    let gh = engine.backward_stored(&s.blocks, tape, gy, &mut gp).unwrap();
    let mut g = backprop_into(h, gh);
    accumulate(&mut gp, &s.stem, &mut g);
    assert_close("axial stored input grad", &to_vec(x.grad(&g).unwrap()), &want_x, 1e-4);
    let floor = 1e-2 * global_scale(&want_p);
    for ((_, got), (_, want)) in grads_of(&s.params(), &gp).iter().zip(&want_p) {
        assert_close_floor("axial stored param", got, want, 1e-4, floor);
    }
}

#[test]
fn engine_misuse_is_an_error() {
    let device = Device::flex().autodiff();
    let blocks = FfnCouplingConfig::new(8, 16).init_additive(2, &device).unwrap();
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig::default());
    let (y, tape) = engine.forward(&blocks, randn([2, 8], &device)).unwrap();
    let gy = Tensor::<2>::ones([2, 8], &device).inner();
    let mut gp = GradientsParams::new();
    assert_eq!(
        engine.backward_stored(&blocks, tape, gy.clone(), &mut gp).unwrap_err(),
        EngineError::NeedsReversible
    );
    let (_, tape) = engine.forward(&blocks, y).unwrap();
    assert_eq!(
        engine.backward(&blocks[..1], tape, gy, &mut gp).unwrap_err(),
        EngineError::DepthMismatch { recorded: 2, given: 1 }
    );
    let plain = Device::flex();
    let blocks = FfnCouplingConfig::new(8, 16).init_additive(2, &plain).unwrap();
    assert_eq!(engine.forward(&blocks, randn([2, 8], &plain)).unwrap_err(), EngineError::NotAutodiff);
}

/// Loss `Σ y ⊙ w` of a tiny stack at `x`, on a plain device.
fn linear_loss<B: Block<2>>(blocks: &[B], x: &[f32], w: &Tensor<2>, device: &Device) -> f64 {
    let x = Tensor::<2>::from_data(TensorData::new(x.to_vec(), w.dims()), device);
    let y = forward_standard(blocks, x);
    (y * w.clone()).sum().into_scalar::<f64>()
}

#[test]
fn engine_gradients_match_finite_differences() {
    let device = Device::flex().autodiff();
    // Width 8: each LayerNorm sees 4 features (over 2 it is a sign function, too sharp for
    // finite differences).
    let blocks = FfnCouplingConfig::new(8, 8).init_affine(3, &device).unwrap();
    let plain: Vec<AffineFfnBlock> = blocks.iter().map(|b| b.valid()).collect();
    let shape = [2, 8];
    let x = randn(shape, &device);
    let w = randn(shape, &device).inner();
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig::default());
    let (_, tape) = engine.forward(&blocks, x.clone()).unwrap();
    let mut gp = GradientsParams::new();
    let gx = to_vec(engine.backward(&blocks, tape, w.clone(), &mut gp).unwrap());

    // Input gradient, every coordinate, central differences in f32 (loss is O(1), eps 1e-2).
    let x0 = to_vec(x.inner());
    let eps = 5e-3f32;
    for j in 0..x0.len() {
        let (mut xp, mut xm) = (x0.clone(), x0.clone());
        xp[j] += eps;
        xm[j] -= eps;
        let plain_dev = Device::flex();
        let fd = (linear_loss(&plain, &xp, &w, &plain_dev) - linear_loss(&plain, &xm, &w, &plain_dev))
            / (2.0 * eps as f64);
        assert!((fd - gx[j] as f64).abs() < 2e-3 * (1.0 + fd.abs()), "x[{j}]: fd {fd} vs engine {}", gx[j]);
    }

    // A few parameter entries of the first block's log-scale network.
    let weight = &blocks[0].s.up.weight;
    let gw = to_vec(gp.get::<2>(weight.id).unwrap());
    let dims = weight.val().dims();
    for k in [0, 5, 11, dims[0] * dims[1] - 1] {
        let bump = |sign: f32| {
            let mut d = vec![0.0f32; dims[0] * dims[1]];
            d[k] = sign * eps;
            let delta = Tensor::<2>::from_data(TensorData::new(d, dims), &Device::flex());
            let mut moved = plain.clone();
            moved[0].s.up.weight = moved[0].s.up.weight.clone().map(|v| v + delta);
            linear_loss(&moved, &x0, &w, &Device::flex())
        };
        let fd = (bump(1.0) - bump(-1.0)) / (2.0 * eps as f64);
        assert!((fd - gw[k] as f64).abs() < 2e-3 * (1.0 + fd.abs()), "W[{k}]: fd {fd} vs engine {}", gw[k]);
    }
}

#[test]
fn monitor_falls_back_on_an_ill_conditioned_stack() {
    let device = Device::flex().autodiff();
    // Additive stack whose FFN outputs are scaled by 1e5: the stream grows to ~1e6 and the
    // subtraction in the inverse loses the input's digits.
    let mut blocks = FfnCouplingConfig::new(8, 16).init_additive(24, &device).unwrap();
    for b in &mut blocks {
        b.f.down.weight = b.f.down.weight.clone().map(|w| (w * 1e5).detach().require_grad());
        b.g.down.weight = b.g.down.weight.clone().map(|w| (w * 1e5).detach().require_grad());
    }
    let s = Setup { stem: init::linear(6, 8, &device), blocks, head: init::linear(8, 3, &device) };
    let (x, target) = (randn([4, 6], &device), randn([4, 3], &device));
    let (want_p, want_x) = standard_step(&s, x.clone(), target.clone());

    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig { every: 1, threshold: 1e-4 });
    let (got_p, got_x) = engine_step(&s, &mut engine, x.clone(), target.clone(), false);
    let stats = engine.stats();
    assert_eq!((stats.checks, stats.fallbacks), (1, 1), "error {:?}", stats.last_error);
    assert!(stats.last_error.unwrap() > 1e-4);
    // The fallback is standard backprop: same gradients as the reference (1e-3: on a stream of
    // ~1e5 the reference itself moves by ~1e-4 with the order of multithreaded reductions).
    assert_close("fallback input grad", &got_x, &want_x, 1e-3);
    let floor = 1e-2 * global_scale(&want_p);
    for ((_, g), (_, w)) in got_p.iter().zip(&want_p) {
        assert_close_floor("fallback param", g, w, 1e-3, floor);
    }
    // Without the monitor the same stack gives wrong gradients: the fallback was needed.
    let mut blind = Engine::new(Mode::Reconstruct, MonitorConfig { every: 0, threshold: 1e-4 });
    let (_, blind_x) = engine_step(&s, &mut blind, x, target, false);
    let blind_rel = max_abs_diff(&blind_x, &want_x) / want_x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(
        blind_rel > 1e-2,
        "reconstructed gradient only {blind_rel:e} off: stack not ill-conditioned enough"
    );
}

#[test]
fn monitor_accepts_a_well_conditioned_stack() {
    let device = Device::flex().autodiff();
    let blocks = FfnCouplingConfig::new(8, 16).init_additive(16, &device).unwrap();
    let s = Setup { stem: init::linear(6, 8, &device), blocks, head: init::linear(8, 3, &device) };
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig { every: 2, threshold: 1e-4 });
    for _ in 0..3 {
        engine_step(&s, &mut engine, randn([4, 6], &device), randn([4, 3], &device), false);
    }
    let stats = engine.stats();
    assert_eq!((stats.checks, stats.fallbacks), (2, 0), "steps 0 and 2 are checked");
    assert!(stats.last_error.unwrap() < 1e-5);
}

/// log|det A| by Gaussian elimination with partial pivoting (f64).
fn log_abs_det(mut a: Vec<Vec<f64>>) -> f64 {
    let n = a.len();
    let mut log_det = 0.0;
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
        a.swap(c, p);
        let pivot = a[c][c];
        log_det += pivot.abs().ln();
        let pivot_row = a[c].clone();
        for row in a.iter_mut().skip(c + 1) {
            let f = row[c] / pivot;
            for (v, p) in row.iter_mut().zip(&pivot_row).skip(c) {
                *v -= f * p;
            }
        }
    }
    log_det
}

#[test]
fn affine_log_det_equals_naive_jacobian_determinant() {
    let device = Device::flex().autodiff();
    let mut largest = 0.0f64;
    // Several random blocks and inputs; every one must agree, and at least one must have a
    // log-det far from 0 (a clearly volume-changing map), so the test cannot pass vacuously.
    for _ in 0..8 {
        let mut blocks = FfnCouplingConfig::new(6, 8).with_bound(1.5).init_affine(1, &device).unwrap();
        // Shift the raw log-scale by +0.5 so that the log-det is usually far from 0.
        let bias = blocks[0].s.down.bias.take().unwrap();
        blocks[0].s.down.bias = Some(bias.map(|b| (b + 0.5).detach().require_grad()));
        let block = &blocks[0];
        let x = randn([1, 6], &device) * 2.0;
        let (_, log_det) = block.valid().forward_with_log_det(x.clone().inner());
        let log_det = to_vec(log_det)[0] as f64;
        // Jacobian row by row: ∂y_i/∂x via one backward per output coordinate.
        let jac: Vec<Vec<f64>> = (0..6)
            .map(|i| {
                let xl = x.clone().detach().require_grad();
                let y = block.forward(xl.clone()).slice([0..1, i..i + 1]).sum();
                let g = y.backward();
                to_vec(xl.grad(&g).unwrap()).into_iter().map(f64::from).collect()
            })
            .collect();
        let naive = log_abs_det(jac);
        assert!((naive - log_det).abs() < 1e-4 * (1.0 + naive.abs()), "naive {naive} vs log-det {log_det}");
        largest = largest.max(log_det.abs());
    }
    assert!(largest > 0.3, "every log-det was below 0.3 ({largest}): nothing was tested");
}
