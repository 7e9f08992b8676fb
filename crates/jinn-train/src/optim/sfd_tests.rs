//! SFD: AdamW equality with the bound inactive, the spectral bound against an f64 Jacobi
//! reference, every parameter moving, the affine log-scale bound, checkpoint round trips,
//! the coupling-weight selector and the config field.

use super::sfd::{sfd_optimizer, spectral_norm};
use super::spectral::{coupling_weight_paths, coupling_weights};
use super::{BoundScaling, OptimConfig, OptimizerKind};
use crate::checkpoint::{save, Checkpoint, TrainState};
use crate::config::TrainConfig;
use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::Linear;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::{Device, Tensor};
use jinn_nn::reversible::{
    AdditiveFfnBlock, AffineFfnBlock, Block, FfnCouplingConfig, ReversibleBlock, ReversibleCausalConfig,
};
use std::collections::BTreeMap;

/// A stem, one additive and one affine FFN coupling (width 8, hidden 12) and a head.
#[derive(Module, Debug)]
struct Net {
    stem: Linear,
    additive: Vec<AdditiveFfnBlock>,
    affine: Vec<AffineFfnBlock>,
    head: Linear,
}

const WIDTH: usize = 8;
const LOG_SCALE_BOUND: f64 = 0.5;

impl Net {
    fn new(device: &Device) -> Net {
        let cfg = FfnCouplingConfig::new(WIDTH, 12).with_bound(LOG_SCALE_BOUND);
        // Seeded and drawn under the process-wide init lock: tests run in parallel threads and
        // share the backend's generator.
        let net = jinn_nn::init::seeded_init(device, 42, || {
            Ok::<_, jinn_nn::NnError>(Net {
                stem: jinn_nn::init::linear(WIDTH, WIDTH, device),
                additive: cfg.init_additive(1, device)?,
                affine: cfg.init_affine(1, device)?,
                head: jinn_nn::init::linear(WIDTH, WIDTH, device),
            })
        })
        .unwrap();
        // Fix the lazily initialised weights now, so clones share values.
        net.map(&mut Materialise)
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = self.stem.forward(x); // [batch, width]
        let h = self.additive.iter().fold(h, |h, b| b.forward(h));
        let h = self.affine.iter().fold(h, |h, b| b.forward(h));
        self.head.forward(h)
    }
}

struct Materialise;

impl burn::module::ModuleMapper for Materialise {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, value, mapper) = param.consume();
        Param::from_mapped_value(id, value, mapper)
    }
}

/// `[rows, WIDTH]` of N(0, σ²) values drawn on the host from `seed` (Box–Muller), not from the
/// backend's generator, which tests running in parallel threads share and reseed.
fn seeded_normal(rows: usize, sigma: f64, seed: u64, device: &Device) -> Tensor<2> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let values: Vec<f32> = (0..rows * WIDTH)
        .map(|_| {
            let (u, v) = (1.0 - rng.random::<f64>(), rng.random::<f64>()); // u in (0, 1]
            (sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect();
    Tensor::from_data(burn::tensor::TensorData::new(values, [rows, WIDTH]), device)
}

/// Gradients of a fixed regression loss; `k` varies the batch per step.
fn grads(model: &Net, device: &Device, k: u64) -> GradientsParams {
    let x = seeded_normal(6, 1.0, 200 + 2 * k, device);
    let target = seeded_normal(6, 1.0, 201 + 2 * k, device);
    let loss = (model.forward(x) - target).square().mean();
    GradientsParams::from_grads(loss.backward(), model)
}

/// Every float parameter as (module path → (dims, f64 values)).
fn params(model: &Net) -> BTreeMap<String, (Vec<usize>, Vec<f64>)> {
    #[derive(Default)]
    struct Collect(Vec<String>, BTreeMap<String, (Vec<usize>, Vec<f64>)>);
    impl ModuleVisitor for Collect {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.0.push(name.into());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.0.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let t = param.val();
            let dims = t.dims().to_vec();
            let v = t.into_data().convert::<f64>().try_to_vec::<f64>().unwrap();
            self.1.insert(self.0.join("."), (dims, v));
        }
    }
    let mut c = Collect::default();
    model.visit(&mut c);
    c.1
}

fn bits(model: &Net) -> BTreeMap<String, Vec<u64>> {
    params(model).into_iter().map(|(k, (_, v))| (k, v.iter().map(|x| x.to_bits()).collect())).collect()
}

/// Largest singular value of the `rows × cols` row-major matrix `w`, in f64: the square root
/// of the largest eigenvalue of `WᵀW`, by cyclic Jacobi rotations (a naive reference).
fn sigma_max(w: &[f64], rows: usize, cols: usize) -> f64 {
    let n = cols;
    let mut a = vec![0.0f64; n * n];
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = (0..rows).map(|r| w[r * cols + i] * w[r * cols + j]).sum();
        }
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|(i, j)| i != j)
            .map(|(i, j)| a[i * n + j].powi(2))
            .sum();
        let total: f64 = a.iter().map(|x| x * x).sum();
        if off <= 1e-30 * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
        }
    }
    (0..n).map(|i| a[i * n + i]).fold(0.0, f64::max).sqrt()
}

#[test]
fn jacobi_reference_matches_a_known_spectrum() {
    // W = U·diag(3, 1)·Vᵀ with rotations U (3×2 columns) and V: σ_max = 3.
    let (c, s) = (0.6f64, 0.8f64);
    let u = [[c, -s], [s, c], [0.0, 0.0]];
    let v = [[1.0 / 2f64.sqrt(), -1.0 / 2f64.sqrt()], [1.0 / 2f64.sqrt(), 1.0 / 2f64.sqrt()]];
    let sig = [3.0, 1.0];
    let mut w = vec![0.0; 6];
    for r in 0..3 {
        for col in 0..2 {
            w[r * 2 + col] = (0..2).map(|k| u[r][k] * sig[k] * v[col][k]).sum();
        }
    }
    assert!((sigma_max(&w, 3, 2) - 3.0).abs() < 1e-12);
}

#[test]
fn coupling_weights_carry_the_parameters_and_spectral_norm_matches_the_reference() {
    let net = Net::new(&Device::flex());
    let all = params(&net);
    let weights = coupling_weights(&net);
    let paths: Vec<String> = weights.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(paths, coupling_weight_paths(&net));
    for (path, w) in weights {
        let (d, v) = &all[&path];
        assert_eq!(w.dims().to_vec(), *d, "{path}");
        let got: Vec<f64> = w.clone().into_data().convert::<f64>().try_to_vec::<f64>().unwrap();
        assert_eq!(&got, v, "{path}");
        let (estimate, reference) = (spectral_norm(&w, 3, 1e-12, 10_000), sigma_max(v, d[0], d[1]));
        assert!((estimate - reference).abs() <= 1e-4 * reference, "{path}: {estimate} vs {reference}");
    }
}

fn adamw_config() -> OptimConfig {
    OptimConfig { weight_decay: 0.05, ..OptimConfig::default() }
}

fn sfd_config(bound: f64) -> OptimConfig {
    OptimConfig { optimizer: OptimizerKind::Sfd, spectral_bound: bound, ..adamw_config() }
}

fn sfd_uniform_config(bound: f64) -> OptimConfig {
    OptimConfig { spectral_scaling: BoundScaling::Uniform, ..sfd_config(bound) }
}

fn sfd_shape_config(bound: f64) -> OptimConfig {
    OptimConfig { spectral_scaling: BoundScaling::Shape, ..sfd_config(bound) }
}

#[test]
fn without_spectral_control_sfd_equals_adamw_bit_for_bit() {
    let device = Device::flex().autodiff();
    let start = Net::new(&device);
    let cfg = adamw_config();
    let mut adamw = cfg.init().unwrap();
    let adamw_cfg =
        AdamWConfig::new().with_beta_1(0.9).with_beta_2(0.9).with_epsilon(1e-8).with_weight_decay(0.05);
    let mut sfd_off = sfd_optimizer(&start, adamw_cfg.build(), None);
    // Active control whose bound is never reached: the rescale factor is exactly 1.
    let mut sfd_loose = sfd_uniform_config(1e6).init_for(&start).unwrap();
    let mut sfd_shape_loose = sfd_shape_config(1e6).init_for(&start).unwrap();
    let (mut a, mut b, mut c, mut d) = (start.clone(), start.clone(), start.clone(), start);
    for step in 0..4 {
        let lr = 1e-2 * (step + 1) as f64;
        a = adamw.step(lr, a.clone(), grads(&a, &device, step));
        b = sfd_off.step(lr, b.clone(), grads(&b, &device, step));
        c = sfd_loose.step(lr, c.clone(), grads(&c, &device, step));
        d = sfd_shape_loose.step(lr, d.clone(), grads(&d, &device, step));
        assert_eq!(bits(&a), bits(&b), "step {step}: SFD without control differs from AdamW");
        assert_eq!(bits(&a), bits(&c), "step {step}: uniform SFD, unreached bound, differs from AdamW");
        assert_eq!(bits(&a), bits(&d), "step {step}: shape-scaled SFD, unreached bound, differs");
    }
}

/// The bound of a `[fan_in, fan_out]` matrix under `scaling`, written out independently of
/// `BoundScaling::bound_for`.
fn expected_bound(scaling: BoundScaling, bound: f64, fan_in: usize, fan_out: usize) -> f64 {
    match scaling {
        BoundScaling::Uniform => bound,
        BoundScaling::Shape => bound * (fan_out as f64).sqrt() / (fan_in as f64).sqrt(),
    }
}

#[test]
fn every_controlled_matrix_stays_within_the_bound_after_every_step() {
    let device = Device::flex().autodiff();
    for scaling in [BoundScaling::Uniform, BoundScaling::Shape] {
        let mut model = Net::new(&device);
        let bound = 0.6;
        let controlled = coupling_weight_paths(&model);
        let bound_of = |d: &[usize]| expected_bound(scaling, bound, d[0], d[1]);
        // Below the initial norms, so the control must act from the first step.
        let initial = params(&model);
        let above = controlled
            .iter()
            .filter(|p| {
                let (d, v) = &initial[*p];
                sigma_max(v, d[0], d[1]) > bound_of(d)
            })
            .count();
        assert!(above >= 4, "{scaling}: only {above} matrices start above the bound");
        let mut optim =
            OptimConfig { spectral_scaling: scaling, ..sfd_config(bound) }.init_for(&model).unwrap();
        for step in 0..12 {
            model = optim.step(3e-2, model.clone(), grads(&model, &device, step));
            let now = params(&model);
            let mut at_bound = 0;
            for path in &controlled {
                let (d, v) = &now[path];
                let (s, b) = (sigma_max(v, d[0], d[1]), bound_of(d));
                assert!(s <= b * (1.0 + 1e-4), "{scaling} step {step}: {path} has σ_max {s} > bound {b}");
                if s >= b * (1.0 - 1e-3) {
                    at_bound += 1;
                }
            }
            assert!(at_bound >= 4, "{scaling} step {step}: only {at_bound} matrices at the bound");
            // The stem and head are outside couplings and are not controlled.
            assert!(!controlled.iter().any(|p| p.starts_with("stem") || p.starts_with("head")));
        }
        if scaling == BoundScaling::Shape {
            // The FFNs expand a coupling half (4) → 12 → 4: `up` and `down` get different bounds,
            // whose product is the uniform bound squared.
            let (up, down) = (&initial["additive.0.f.up.weight"].0, &initial["additive.0.f.down.weight"].0);
            assert_eq!((up.as_slice(), down.as_slice()), (&[4, 12][..], &[12, 4][..]));
            let (bu, bd) = (bound_of(up), bound_of(down));
            assert!(bu > bound && bd < bound && (bu * bd - bound * bound).abs() < 1e-12, "{bu} {bd}");
        }
    }
}

#[test]
fn every_parameter_changes_after_a_step() {
    let device = Device::flex().autodiff();
    let model = Net::new(&device);
    let before = params(&model);
    let g = grads(&model, &device, 0);
    let mut optim = sfd_config(0.6).init_for(&model).unwrap();
    let after = params(&optim.step(1e-3, model.clone(), g));
    assert_eq!(before.len(), after.len());
    for (path, (_, old)) in &before {
        let new = &after[path].1;
        let moved = old.iter().zip(new).filter(|(a, b)| a != b).count();
        assert_eq!(moved, old.len(), "{path}: only {moved} of {} entries changed", old.len());
    }
}

#[test]
fn affine_log_scale_bound_and_inverse_survive_spectral_control() {
    let device = Device::flex().autodiff();
    let mut model = Net::new(&device);
    let mut optim = sfd_config(2.0).init_for(&model).unwrap();
    for step in 0..5 {
        // A huge learning rate: without the tanh bound the log-scale would explode.
        model = optim.step(1.0, model.clone(), grads(&model, &device, step));
    }
    let block = model.affine[0].valid();
    let x = seeded_normal(16, 3.0, 7, &device.clone().without_autodiff());
    let (y, log_det) = block.forward_with_log_det(x.clone());
    let half = (WIDTH / 2) as f64;
    let max_log_det: f64 = log_det.abs().max().into_scalar();
    assert!(max_log_det <= LOG_SCALE_BOUND * half + 1e-5, "Σ|s| {max_log_det} exceeds c·M/2");
    let err: f64 = (block.inverse(y) - x.clone()).abs().max().into_scalar();
    let scale: f64 = x.abs().max().into_scalar();
    assert!(err / scale < 1e-5, "affine inverse error {err} after SFD steps");
}

fn state(step: u64) -> TrainState {
    TrainState {
        step,
        model_kind: "sfd-test".into(),
        config: serde_json::json!({}),
        seed: 0,
        loader: None,
        val_loader: None,
        metrics_head: vec![],
        extra: Default::default(),
    }
}

#[test]
fn checkpoint_round_trip_restores_moments_vectors_and_step() {
    let device = Device::flex().autodiff();
    let cfg = sfd_config(0.6);
    let mut model = Net::new(&device);
    let mut optim = cfg.init_for(&model).unwrap();
    for step in 0..3 {
        model = optim.step(1e-2, model.clone(), grads(&model, &device, step));
    }
    // The record carries one power vector per controlled matrix.
    let record = optim.to_record();
    let controlled = coupling_weight_paths(&model).len();
    let dir = tempfile::tempdir().unwrap();
    let ckpt_dir = save(dir.path(), &model, &optim, state(3)).unwrap();

    let ckpt = Checkpoint::open(&ckpt_dir).unwrap();
    let fresh = Net::new(&device);
    let restored_model = ckpt.load_model(fresh).unwrap();
    let mut restored_optim = ckpt.load_optimizer(cfg.init_for(&restored_model).unwrap()).unwrap();
    assert_eq!(bits(&restored_model), bits(&model));
    assert_eq!(restored_optim.to_record().len(), record.len());
    // Two AdamW moments (m, v) per parameter plus one vector per controlled matrix.
    let n_params = params(&model).len();
    assert_eq!(record.len(), 2 * n_params + controlled);

    let mut restored = restored_model;
    for step in 3..5 {
        model = optim.step(1e-2, model.clone(), grads(&model, &device, step));
        restored = restored_optim.step(1e-2, restored.clone(), grads(&restored, &device, step));
        assert_eq!(bits(&restored), bits(&model), "step {step} differs after restore");
    }

    // An AdamW checkpoint does not load into SFD (its states would silently restart).
    let adamw_dir = tempfile::tempdir().unwrap();
    let mut adamw = adamw_config().init().unwrap();
    let m = adamw.step(1e-2, model.clone(), grads(&model, &device, 9));
    let p = save(adamw_dir.path(), &m, &adamw, state(1)).unwrap();
    let Err(err) = Checkpoint::open(&p).unwrap().load_optimizer(cfg.init_for(&m).unwrap()) else {
        panic!("an AdamW checkpoint loaded into SFD");
    };
    assert!(err.to_string().contains("train.optim.optimizer"), "{err}");
}

#[test]
fn selector_finds_exactly_the_coupling_sub_network_matrices() {
    let device = Device::flex();
    // Causal blocks: F = attention (query, key, value, output), G = FFN (up, down).
    #[derive(Module, Debug)]
    struct Lm {
        embed: Linear,
        blocks: Vec<jinn_nn::reversible::ReversibleCausalBlock>,
    }
    let lm = Lm {
        embed: jinn_nn::init::linear(8, 8, &device),
        blocks: ReversibleCausalConfig::new(8, 16, 2).init_stack(2, &device).unwrap(),
    };
    let mut want = Vec::new();
    for i in 0..2 {
        for m in ["query", "key", "value", "output"] {
            want.push(format!("blocks.{i}.f.attn.{m}.weight"));
        }
        want.push(format!("blocks.{i}.g.up.weight"));
        want.push(format!("blocks.{i}.g.down.weight"));
    }
    let mut got = coupling_weight_paths(&lm);
    got.sort();
    want.sort();
    assert_eq!(got, want);

    let net = Net::new(&device);
    let got = coupling_weight_paths(&net);
    let want: Vec<String> = ["additive.0.f", "additive.0.g", "affine.0.s", "affine.0.t"]
        .iter()
        .flat_map(|p| [format!("{p}.up.weight"), format!("{p}.down.weight")])
        .collect();
    assert_eq!(got, want);
}

#[test]
fn optimizer_field_parses_and_unknown_names_are_refused() {
    let t: TrainConfig =
        crate::config::from_str("[optim]\noptimizer = \"sfd\"\nspectral_bound = 2.5\n", "t.toml", &[])
            .unwrap();
    assert_eq!(t.optim.optimizer, OptimizerKind::Sfd);
    assert_eq!(t.optim.spectral_bound, 2.5);
    assert_eq!(t.optim.spectral_scaling, OptimConfig::default().spectral_scaling);
    for scaling in [BoundScaling::Uniform, BoundScaling::Shape] {
        let text = format!("[optim]\noptimizer = \"sfd\"\nspectral_scaling = \"{scaling}\"\n");
        let t: TrainConfig = crate::config::from_str(&text, "t.toml", &[]).unwrap();
        assert_eq!(t.optim.spectral_scaling, scaling);
    }
    let err = crate::config::from_str::<TrainConfig>("[optim]\nspectral_scaling = \"fan\"\n", "t.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("train.optim.spectral_scaling") && err.contains("fan"), "{err}");
    let err =
        crate::config::from_str::<TrainConfig>("[optim]\noptimizer = \"adam\"\n", "t.toml", &[]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("train.optim.optimizer") && msg.contains("adam"), "{msg}");
    let over = ["optim.optimizer=sgd".to_string()];
    let err = crate::config::from_str::<TrainConfig>("", "t.toml", &over).unwrap_err();
    assert!(err.to_string().contains("train.optim.optimizer"), "{err}");
    // SFD needs the model.
    let sfd = sfd_config(1.0);
    let Err(err) = sfd.init() else { panic!("SFD built without the model") };
    assert!(err.to_string().contains("train.optim.optimizer"), "{err}");
    let bad = OptimConfig { spectral_bound: 0.0, ..sfd };
    assert!(bad.validate().unwrap_err().to_string().contains("train.optim.spectral_bound"));
}
