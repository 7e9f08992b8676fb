use super::*;
use crate::optim::{clip_global_norm, OptimConfig};
use burn::module::{ModuleVisitor, ParamId};
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{DType, TensorData};
use std::collections::BTreeMap;

/// Two-layer tanh MLP `[b, 8] → [b, 16] → [b, 4]`.
#[derive(Module, Debug)]
struct Mlp {
    a: Linear,
    b: Linear,
}

impl Mlp {
    fn new(device: &Device) -> Mlp {
        device.seed(7);
        Mlp { a: LinearConfig::new(8, 16).init(device), b: LinearConfig::new(16, 4).init(device) }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.b.forward(self.a.forward(x).tanh())
    }
}

/// Deterministic regression batch `(x [6, 8], y [6, 4])` in f32.
fn batch(device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..48).map(|i| ((i * 37 % 17) as f32 - 8.0) / 8.0).collect();
    let y: Vec<f32> = (0..24).map(|i| ((i * 11 % 7) as f32 - 3.0) / 3.0).collect();
    (
        Tensor::from_data(TensorData::new(x, [6, 8]), device),
        Tensor::from_data(TensorData::new(y, [6, 4]), device),
    )
}

/// Loss (as f32 on the host) and master-parameter gradients of one forward/backward at
/// `precision`.
fn loss_and_grads(master: &Mlp, precision: Precision, device: &Device) -> (f32, GradientsParams) {
    let (x, y) = batch(device);
    let model = precision.compute_model(master);
    let pred = model.forward(precision.cast_input(x)); // [6, 4]
    let loss = (pred - precision.cast_input(y)).square().mean(); // [1]
    let value = loss.clone().into_scalar::<f32>();
    (value, GradientsParams::from_grads(loss.backward(), master))
}

/// Every float parameter's id → (dtype, values as f32).
#[derive(Default)]
struct Params(BTreeMap<ParamId, (DType, Vec<f32>)>);

impl ModuleVisitor for Params {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        self.0.insert(param.id, (t.dtype(), t.try_into_vec_as::<f32>().unwrap()));
    }
}

fn params<M: Module>(m: &M) -> BTreeMap<ParamId, (DType, Vec<f32>)> {
    let mut v = Params::default();
    m.visit(&mut v);
    v.0
}

/// Gradient of each master parameter as (dtype, f32 values).
fn grads_of(master: &Mlp, grads: &GradientsParams) -> BTreeMap<ParamId, (DType, Vec<f32>)> {
    struct G<'a>(&'a GradientsParams, BTreeMap<ParamId, (DType, Vec<f32>)>);
    impl ModuleVisitor for G<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let g = self.0.get::<D>(param.id).expect("every parameter has a gradient");
            self.1.insert(param.id, (g.dtype(), g.try_into_vec_as::<f32>().unwrap()));
        }
    }
    let mut v = G(grads, BTreeMap::new());
    master.visit(&mut v);
    v.1
}

#[test]
fn bf16_compute_gives_f32_gradients_close_to_f32_ones() {
    let device = Device::flex().autodiff();
    Precision::Bf16.ensure_supported(&device).unwrap();
    let master = Mlp::new(&device);

    // The compute copy really is bf16, with the master's parameter ids.
    let copy = params(&Precision::Bf16.compute_model(&master));
    let orig = params(&master);
    assert_eq!(copy.keys().collect::<Vec<_>>(), orig.keys().collect::<Vec<_>>());
    assert!(copy.values().all(|(d, _)| *d == DType::BF16));
    assert!(orig.values().all(|(d, _)| *d == DType::F32));

    let (l32, g32) = loss_and_grads(&master, Precision::F32, &device);
    let (l16, g16) = loss_and_grads(&master, Precision::Bf16, &device);
    assert!(l16.is_finite() && (l16 - l32).abs() <= 0.02 * l32.abs(), "bf16 {l16} vs f32 {l32}");
    assert_ne!(l16, l32, "the bf16 forward should round differently from f32");
    let (g32, g16) = (grads_of(&master, &g32), grads_of(&master, &g16));
    for (id, (dtype, g)) in &g16 {
        assert_eq!(*dtype, DType::F32, "gradients reach the master in f32");
        let r = &g32[id].1;
        // Relative L2 error of the gradient: bf16 has an 8-bit mantissa (≈ 0.4 % per value).
        let err: f64 = g.iter().zip(r).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>().sqrt();
        let norm: f64 = r.iter().map(|b| (*b as f64).powi(2)).sum::<f64>().sqrt();
        assert!(err <= 0.05 * norm, "gradient error {err} vs norm {norm}");
    }
}

#[test]
fn a_bf16_step_updates_the_f32_master_weights() {
    let device = Device::flex().autodiff();
    let mut master = Mlp::new(&device);
    let mut optim = OptimConfig::default().init().unwrap();
    let before = params(&master);
    let (l0, _) = loss_and_grads(&master, Precision::F32, &device);
    for _ in 0..20 {
        let (loss, mut grads) = loss_and_grads(&master, Precision::Bf16, &device);
        assert!(loss.is_finite());
        clip_global_norm(&master, &mut grads, 1.0);
        master = optim.step(1e-2, master, grads);
    }
    let after = params(&master);
    for (id, (dtype, w)) in &after {
        assert_eq!(*dtype, DType::F32, "master weights stay f32");
        assert_ne!(w, &before[id].1, "every parameter moved");
    }
    let (l1, _) = loss_and_grads(&master, Precision::F32, &device);
    assert!(l1 < 0.8 * l0, "20 bf16 steps lower the f32 loss: {l0} → {l1}");
}

#[test]
fn f32_is_the_default_and_parses_from_toml() {
    #[derive(Deserialize)]
    struct S {
        p: Precision,
    }
    assert_eq!(Precision::default(), Precision::F32);
    assert_eq!(toml::from_str::<S>("p = \"bf16\"").unwrap().p, Precision::Bf16);
    assert_eq!(toml::from_str::<S>("p = \"f32\"").unwrap().p, Precision::F32);
    assert!(toml::from_str::<S>("p = \"fp8\"").is_err());
    // The f32 compute model is the master itself (no casts).
    let device = Device::flex().autodiff();
    let master = Mlp::new(&device);
    assert_eq!(params(&Precision::F32.compute_model(&master)), params(&master));
}
