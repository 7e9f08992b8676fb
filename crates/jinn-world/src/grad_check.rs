//! Test helper: two sets of gradients of one model agree parameter by parameter.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

/// Every parameter's gradient in `a` and `b`, flattened, in visiting order.
struct Pairs<'a> {
    a: &'a GradientsParams,
    b: &'a GradientsParams,
    /// Parameters without a gradient in either set are skipped (frozen) instead of failing.
    allow_frozen: bool,
    out: Vec<(Vec<f32>, Vec<f32>)>,
}

impl ModuleVisitor for Pairs<'_> {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        let flat = |g: &GradientsParams| g.get::<D>(p.id).map(|t| t.try_into_vec_as::<f32>().unwrap());
        match (flat(self.a), flat(self.b)) {
            (Some(a), Some(b)) => self.out.push((a, b)),
            (None, None) if self.allow_frozen => {}
            (a, b) => panic!("gradient present: reference {}, other {}", a.is_some(), b.is_some()),
        }
    }
}

/// Panics unless `other` holds a gradient for exactly the parameters of `model` that
/// `reference` does (every parameter, unless `allow_frozen`), and each differs by at most `rel_tol` relative to that parameter's
/// largest reference gradient (floored at 1e-3 of the largest overall: the exact gradient of
/// attention key biases is ~0, since softmax ignores a shift of every score).
pub fn assert_grads_close<M: Module>(
    model: &M,
    reference: &GradientsParams,
    other: &GradientsParams,
    rel_tol: f32,
    allow_frozen: bool,
    label: &str,
) {
    let mut pairs = Pairs { a: reference, b: other, allow_frozen, out: Vec::new() };
    model.visit(&mut pairs);
    assert_eq!(pairs.out.len(), reference.len(), "{label}: every gradient is a parameter's");
    assert_eq!(reference.len(), other.len(), "{label}: same parameters have gradients");
    let max_abs = |v: &[f32]| v.iter().fold(0f32, |a, x| a.max(x.abs()));
    let global = pairs.out.iter().map(|(r, _)| max_abs(r)).fold(0f32, f32::max);
    assert!(global > 0.0, "{label}: the loss has gradients");
    for (i, (r, m)) in pairs.out.iter().enumerate() {
        let scale = max_abs(r).max(1e-3 * global);
        let diff = r.iter().zip(m).fold(0f32, |a, (x, y)| a.max((x - y).abs()));
        assert!(diff <= rel_tol * scale, "{label} parameter {i}: max diff {diff} vs scale {scale}");
    }
}
