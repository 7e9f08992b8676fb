use super::super::tests::{reversible, tiny_dynamics, tiny_tokenizer};
use super::super::{ActionConfig, Genie, GenieConfig};
use crate::dynamics::DynamicsKind;
use crate::grad_check::assert_grads_close;
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use jinn_data::rng::SampleStreams;
use jinn_nn::reversible::{Engine, Mode, MonitorConfig};
use jinn_train::optim::OptimConfig;

/// A reversible Genie (two reversible blocks, width 16) with a co-trained LAM, so the
/// gradient also has to reach the stem's LAM through the engine.
fn reversible_genie(kind: DynamicsKind, device: &Device) -> Genie {
    let cfg = GenieConfig {
        tokenizer: tiny_tokenizer(),
        actions: ActionConfig::Lam { lam: crate::lam::tests::tiny(), co_train: true },
        dynamics: crate::dynamics::DynamicsConfig { num_blocks: 2, ..reversible(tiny_dynamics(kind)) },
    };
    cfg.init(device).unwrap()
}

fn clip(device: &Device) -> Tensor<5> {
    crate::frames_to_unit(&crate::lam::tests::moving_square(2, 3), [2, 3, 16, 16, 3], device)
    // [b, t, h, w, c]
}

fn memory_free() -> Engine {
    Engine::new(Mode::Reconstruct, MonitorConfig { every: 0, threshold: 1e-3 })
}

/// Every trainable parameter's gradient in `a` and `b`, flattened, in visiting order.
#[test]
fn memory_free_gradients_equal_standard_autodiff() {
    for kind in [DynamicsKind::MASKGIT, DynamicsKind::CAUSAL] {
        let device = Device::flex().autodiff();
        device.seed(11);
        let genie = reversible_genie(kind, &device);
        assert_eq!(genie.dynamics.reversible_blocks.len(), 2);
        assert!(genie.dynamics.transformer.blocks.is_empty());
        let divisor = 2.0;

        let out = genie.forward(clip(&device), None, &SampleStreams::new(1, "mask", 0, 2)).unwrap();
        let reference = GradientsParams::from_grads(out.loss.clone().div_scalar(divisor).backward(), &genie);
        let (rev_out, rev) = genie
            .forward_backward_reversible(
                clip(&device),
                None,
                None,
                &SampleStreams::new(1, "mask", 0, 2),
                &|_| 1.0 / divisor,
                &mut memory_free(),
            )
            .unwrap();
        let loss = |t: Tensor<1>| t.into_scalar::<f32>();
        let (a, b) = (loss(out.loss), loss(rev_out.loss));
        assert!((a - b).abs() <= 1e-5 * a.abs(), "{kind:?}: same forward, {a} vs {b}");

        let lam_params = genie.lam.as_ref().unwrap().num_params();
        assert!(lam_params > 0);
        assert_grads_close(&genie, &reference, &rev, 1e-4, true, &format!("{kind:?}"));
    }
}

#[test]
fn reversible_dynamics_trains_with_memory_free_backprop() {
    let device = Device::flex().autodiff();
    device.seed(5);
    let mut genie = reversible_genie(DynamicsKind::MASKGIT, &device);
    let mut optim = OptimConfig::default().init().unwrap();
    let mut engine = Engine::new(Mode::Reconstruct, MonitorConfig { every: 5, threshold: 1e-3 });
    let mut losses = Vec::new();
    for step in 0..30 {
        // The same clip and mask every step: the loss must fall.
        let (out, grads) = genie
            .forward_backward_reversible(
                clip(&device),
                None,
                None,
                &SampleStreams::new(2, "mask", 0, 2),
                &|_| 1.0,
                &mut engine,
            )
            .unwrap();
        losses.push(out.loss.into_scalar::<f32>());
        genie = optim.step(if step < 3 { 1e-3 } else { 3e-3 }, genie, grads);
    }
    let (first, last) = (losses[0], *losses.last().unwrap());
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(last < 0.7 * first, "loss did not fall: {losses:?}");
    let stats = engine.stats();
    assert_eq!(stats.checks, 6, "the monitor checked every 5th step");
    assert_eq!(stats.fallbacks, 0, "reconstruction stayed accurate: {stats:?}");
}

#[test]
fn standard_model_is_a_clear_error() {
    let device = Device::flex().autodiff();
    let cfg = GenieConfig {
        tokenizer: tiny_tokenizer(),
        actions: ActionConfig::Gt { num_actions: 3, action_dim: 4 },
        dynamics: tiny_dynamics(DynamicsKind::MASKGIT),
    };
    let genie = cfg.init(&device).unwrap();
    let err = genie
        .forward_backward_reversible(
            clip(&device),
            None,
            None,
            &SampleStreams::new(0, "m", 0, 2),
            &|_| 1.0,
            &mut memory_free(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("reversible = true"), "{err}");
}
