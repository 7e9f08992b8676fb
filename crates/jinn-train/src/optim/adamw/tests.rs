use super::*;
use burn::tensor::Distribution;

/// The values of `t` on the host.
fn values<const D: usize>(t: &Tensor<D>) -> Vec<f32> {
    t.to_data().try_to_vec::<f32>().unwrap()
}

/// `a` and `b` agree to f32 rounding, element by element.
fn assert_close(what: &str, a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "{what}[{i}]: CPU pass {x} vs Burn {y}");
    }
}

#[test]
fn steps_match_burns_adamw_parameters_and_moments() {
    let device = Device::flex();
    let (beta_1, beta_2, epsilon) = (0.9, 0.95, 1e-8);
    // [130, 300]: 39 000 elements, three rayon tasks, the last one partial.
    let shape = [130, 300];
    for weight_decay in [0.0, 1e-2] {
        let config = OptimConfig { beta_1, beta_2, epsilon, weight_decay, ..OptimConfig::default() };
        let (door, burn) = (AdamW::new(&config), config.adamw().build());
        let start = Tensor::<2>::random(shape, Distribution::Normal(0.0, 1.0), &device);
        let (mut p_cpu, mut p_burn) = (start.clone(), start);
        let (mut s_cpu, mut s_burn) = (None, None);
        for (step, lr) in [3e-3, 1e-3, 5e-4, 2e-3].into_iter().enumerate() {
            let grad =
                Tensor::<2>::random(shape, Distribution::Normal(0.0, 0.1 * (step + 1) as f64), &device);
            (p_cpu, s_cpu) = door.step(lr, p_cpu, grad.clone(), s_cpu);
            (p_burn, s_burn) = burn.step(lr, p_burn, grad, s_burn);
            let (h, b) = (&s_cpu.as_ref().unwrap().momentum, &s_burn.as_ref().unwrap().momentum);
            assert_eq!(h.time, b.time, "step {step}: update count");
            assert_close(
                &format!("wd {weight_decay}, step {step}: parameter"),
                &values(&p_cpu),
                &values(&p_burn),
            );
            assert_close(&format!("step {step}: first moment"), &values(&h.moment_1), &values(&b.moment_1));
            assert_close(&format!("step {step}: second moment"), &values(&h.moment_2), &values(&b.moment_2));
        }
    }
}

#[test]
fn a_burn_state_continues_on_the_cpu_path() {
    // A checkpoint written by Burn's AdamW resumes under the door's CPU pass (same state type).
    let device = Device::flex();
    let config = OptimConfig::default();
    let (door, burn) = (AdamW::new(&config), config.adamw().build());
    let p = Tensor::<1>::random([500], Distribution::Normal(0.0, 1.0), &device);
    let g = Tensor::<1>::random([500], Distribution::Normal(0.0, 1.0), &device);
    let (p, state) = burn.step(1e-3, p, g.clone(), None);
    let (p_cpu, s_cpu) = door.step(1e-3, p.clone(), g.clone(), state.clone());
    let (p_burn, s_burn) = burn.step(1e-3, p, g, state);
    assert_eq!(s_cpu.unwrap().momentum.time, 2);
    assert_eq!(s_burn.unwrap().momentum.time, 2);
    assert_close("parameter", &values(&p_cpu), &values(&p_burn));
}
