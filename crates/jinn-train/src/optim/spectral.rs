//! Which parameters SFD's spectral control acts on: the weight matrices inside the
//! sub-networks of reversible couplings, found by walking any module.
//!
//! Burn's module visitor names each field together with the struct that holds it
//! (`enter_module("f", "Struct:AdditiveCoupling")`), so a walk recognises a coupling's
//! sub-network fields without depending on the crate that defines the couplings (jinn-nn);
//! a test of this crate builds jinn-nn's couplings and checks the selection against them.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

/// Coupling struct (as Burn's visitor names it) → its sub-network fields:
/// `jinn_nn::reversible::AdditiveCoupling { f, g, .. }` and `AffineCoupling { s, t, .. }`.
pub const COUPLING_SUBNETS: &[(&str, &[&str])] =
    &[("Struct:AdditiveCoupling", &["f", "g"]), ("Struct:AffineCoupling", &["s", "t"])];

/// Collects the paths of rank-2 float parameters below a coupling sub-network field.
#[derive(Default)]
struct CouplingWeights {
    path: Vec<String>,
    /// Depth of `path` at which the innermost enclosing sub-network field was entered.
    inside_from: Option<usize>,
    found: Vec<String>,
    /// The found matrices' values (`[rows, cols]`), when asked for.
    values: Option<Vec<Tensor<2>>>,
}

impl ModuleVisitor for CouplingWeights {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push(name.to_string());
        let is_subnet = COUPLING_SUBNETS
            .iter()
            .any(|(container, fields)| *container == container_type && fields.contains(&name));
        if is_subnet && self.inside_from.is_none() {
            self.inside_from = Some(self.path.len());
        }
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        if self.inside_from == Some(self.path.len()) {
            self.inside_from = None;
        }
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if D == 2 && self.inside_from.is_some() {
            self.found.push(self.path.join("."));
            if let Some(values) = &mut self.values {
                let w = param.val();
                let dims = w.dims();
                values.push(w.reshape([dims[0], dims[1]]));
            }
        }
    }
}

/// Module paths (as `ModuleOptimizer` groups see them, e.g. `blocks.3.f.attn.query.weight`)
/// of every matrix inside a reversible coupling's sub-networks in `model`, in visit order.
/// Empty for a model without reversible couplings.
pub fn coupling_weight_paths<M: Module>(model: &M) -> Vec<String> {
    let mut visitor = CouplingWeights::default();
    model.visit(&mut visitor);
    visitor.found
}

/// Every matrix inside a reversible coupling's sub-networks in `model` with its module path
/// (as [`coupling_weight_paths`]), in visit order; each value is `[rows, cols]`.
pub fn coupling_weights<M: Module>(model: &M) -> Vec<(String, Tensor<2>)> {
    let mut visitor = CouplingWeights { values: Some(Vec::new()), ..CouplingWeights::default() };
    model.visit(&mut visitor);
    visitor.found.into_iter().zip(visitor.values.unwrap_or_default()).collect()
}
