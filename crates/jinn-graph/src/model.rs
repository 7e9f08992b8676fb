//! The link predictor: entity amplitudes in C^d and relations acting on them elementwise.
//!
//! An entity `e` is a vector `e ∈ C^d`, stored as real and imaginary parts (`ent_re`,
//! `ent_im`, `[E, d]` each). A relation `r` is a diagonal complex map `x ↦ x ∘ r`:
//! * [`RelationKind::Rotation`] (RotatE-style): `r_i = e^{iθ_i}`, unit modulus, so `r` is a
//!   phase gate; the score of `(h, r, t)` is the negative distance `−Σ_i |(h∘r)_i − t_i|`
//!   (RotatE's margin γ is left out: it cancels in the softmax over all tails);
//! * [`RelationKind::Complex`] (ComplEx-style): `r ∈ C^d` unconstrained; the score is the
//!   bilinear `Re ⟨h∘r, t̄⟩ = Σ_i Re(h_i r_i conj(t_i))`.
//!
//! Both compose: a path `r1, r2, …` maps `h` to `h∘r1∘r2∘…`, a product of diagonal gates,
//! which is how [`crate::paths`] answers multi-hop queries without visiting intermediates.
//! Reciprocal relations (`r + R`) are separate parameters, trained on inverted edges.

use crate::error::{GraphError, Result};
use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::rng::rng_for;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Added under the square root of a complex modulus in distances so its gradient stays finite
/// at zero; far below f32 resolution for any non-trivial distance.
const MODULUS_EPS: f64 = 1e-12;

/// How relations act on entity amplitudes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelationKind {
    /// Unit-modulus phase rotation, distance score (RotatE).
    Rotation,
    /// General diagonal complex map, bilinear score (ComplEx).
    Complex,
}

/// Architecture (the `model` config section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphModelConfig {
    /// Relation family.
    pub kind: RelationKind,
    /// Complex dimension `d` (each entity holds `2d` real numbers).
    pub dim: usize,
    /// Entity (and complex-relation) parts start uniform in `±init_scale`.
    pub init_scale: f64,
}

impl Default for GraphModelConfig {
    fn default() -> Self {
        GraphModelConfig { kind: RelationKind::Complex, dim: 256, init_scale: 1e-2 }
    }
}

impl GraphModelConfig {
    /// Check the fields; errors name them (`model.*`).
    pub fn validate(&self) -> Result<()> {
        if self.dim == 0 {
            return Err(GraphError::config("model.dim", "must be ≥ 1"));
        }
        if !(self.init_scale.is_finite() && self.init_scale > 0.0) {
            return Err(GraphError::config(
                "model.init_scale",
                format!("must be > 0, got {}", self.init_scale),
            ));
        }
        Ok(())
    }

    /// A model for `entities` entities and `relations` relations (reciprocals included),
    /// initialised from `seed` on the host so it is identical on every backend.
    pub fn init(&self, entities: usize, relations: usize, seed: u64, device: &Device) -> Result<GraphModel> {
        self.validate()?;
        if entities == 0 || relations == 0 {
            return Err(GraphError::config("data", "the graph has no entities or no relations"));
        }
        let d = self.dim;
        let s = self.init_scale;
        let uniform = |purpose: &str, n: usize, lim: f64| -> Param<Tensor<2>> {
            let mut rng = rng_for(seed, purpose, 0);
            let v: Vec<f32> = (0..n * d).map(|_| rng.random_range(-lim..lim) as f32).collect();
            Param::from_data(TensorData::new(v, [n, d]), device)
        };
        let (rel_a, rel_im) = match self.kind {
            RelationKind::Rotation => (uniform("init-phase", relations, std::f64::consts::PI), None),
            RelationKind::Complex => {
                (uniform("init-rel-re", relations, s), Some(uniform("init-rel-im", relations, s)))
            }
        };
        Ok(GraphModel {
            ent_re: uniform("init-ent-re", entities, s),
            ent_im: uniform("init-ent-im", entities, s),
            rel_a,
            rel_im,
        })
    }
}

/// A batch of complex vectors as real and imaginary parts, each `[n, d]`.
#[derive(Debug, Clone)]
pub struct ComplexBatch {
    /// Real parts `[n, d]`.
    pub re: Tensor<2>,
    /// Imaginary parts `[n, d]`.
    pub im: Tensor<2>,
}

impl ComplexBatch {
    /// Elementwise product `self ∘ other` (both `[n, d]`).
    pub fn hadamard(self, other: ComplexBatch) -> ComplexBatch {
        let re = self.re.clone() * other.re.clone() - self.im.clone() * other.im.clone();
        let im = self.re * other.im + self.im * other.re;
        ComplexBatch { re, im }
    }

    /// Elementwise modulus `|x_i|` `[n, d]`.
    pub fn modulus(&self) -> Tensor<2> {
        (self.re.clone().square() + self.im.clone().square()).sqrt()
    }
}

/// Entity amplitudes and relation gates (see the module docs).
#[derive(Module, Debug)]
pub struct GraphModel {
    /// Real parts of the entity amplitudes `[E, d]`.
    pub ent_re: Param<Tensor<2>>,
    /// Imaginary parts of the entity amplitudes `[E, d]`.
    pub ent_im: Param<Tensor<2>>,
    /// Rotation: phases `θ` `[2R, d]`; complex: real parts `[2R, d]`.
    pub rel_a: Param<Tensor<2>>,
    /// Complex only: imaginary parts `[2R, d]`; absent for rotations.
    pub rel_im: Option<Param<Tensor<2>>>,
}

/// Ids as an Int tensor `[n]` on `device`.
pub fn ids(values: &[usize], device: &Device) -> Tensor<1, Int> {
    let v: Vec<i64> = values.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(v, [values.len()]), device)
}

impl GraphModel {
    /// The relation family.
    pub fn kind(&self) -> RelationKind {
        if self.rel_im.is_some() {
            RelationKind::Complex
        } else {
            RelationKind::Rotation
        }
    }

    /// Number of entities `E`.
    pub fn num_entities(&self) -> usize {
        self.ent_re.dims()[0]
    }

    /// Number of relations `2R` (reciprocals included).
    pub fn num_relations(&self) -> usize {
        self.rel_a.dims()[0]
    }

    /// The device the parameters live on.
    pub fn device(&self) -> Device {
        self.ent_re.val().device()
    }

    /// Amplitudes of entities `idx` `[n]` → `[n, d]`.
    pub fn entities(&self, idx: Tensor<1, Int>) -> ComplexBatch {
        ComplexBatch { re: self.ent_re.val().select(0, idx.clone()), im: self.ent_im.val().select(0, idx) }
    }

    /// All entity amplitudes `[E, d]`.
    pub fn all_entities(&self) -> ComplexBatch {
        ComplexBatch { re: self.ent_re.val(), im: self.ent_im.val() }
    }

    /// Gates of relations `idx` `[n]` → `[n, d]` (`cos θ + i sin θ` for rotations).
    pub fn relations(&self, idx: Tensor<1, Int>) -> ComplexBatch {
        let a = self.rel_a.val().select(0, idx.clone()); // [n, d]
        match &self.rel_im {
            Some(im) => ComplexBatch { re: a, im: im.val().select(0, idx) },
            None => ComplexBatch { re: a.clone().cos(), im: a.sin() },
        }
    }

    /// Apply relations `rel` `[n]` to amplitudes `x` `[n, d]`: `x ∘ r`.
    pub fn apply(&self, x: ComplexBatch, rel: Tensor<1, Int>) -> ComplexBatch {
        x.hadamard(self.relations(rel))
    }

    /// Query amplitudes `h ∘ r` `[n, d]` for heads and relations `[n]`.
    pub fn query(&self, heads: Tensor<1, Int>, rels: Tensor<1, Int>) -> ComplexBatch {
        self.apply(self.entities(heads), rels)
    }

    /// Scores of every entity as the tail of each query `q` `[n, d]` → `[n, E]`.
    pub fn score_all(&self, q: ComplexBatch) -> Tensor<2> {
        let e = self.all_entities(); // [E, d]
        match self.kind() {
            // Re⟨q, ē⟩ = q_re·e_re + q_im·e_im
            RelationKind::Complex => q.re.matmul(e.re.transpose()) + q.im.matmul(e.im.transpose()),
            // −Σ_i |q_i − e_i|, broadcast [n, 1, d] − [1, E, d]
            RelationKind::Rotation => {
                let dre = q.re.unsqueeze_dim::<3>(1) - e.re.unsqueeze_dim::<3>(0); // [n, E, d]
                let dim = q.im.unsqueeze_dim::<3>(1) - e.im.unsqueeze_dim::<3>(0); // [n, E, d]
                let dist = (dre.square() + dim.square()).add_scalar(MODULUS_EPS).sqrt().sum_dim(2); // [n, E, 1]
                dist.squeeze_dim::<2>(2).neg() // [n, E]
            }
        }
    }

    /// Mean over the batch of the N3 penalty `Σ_i |h_i|³ + |r_i|³ + |t_i|³` (Lacroix et al.
    /// 2018; for rotations the relation term is the constant `d`).
    pub fn n3(&self, heads: Tensor<1, Int>, rels: Tensor<1, Int>, tails: Tensor<1, Int>) -> Tensor<1> {
        let n = heads.dims()[0] as f64;
        let cube = |x: ComplexBatch| (x.re.square() + x.im.square()).powf_scalar(1.5).sum(); // [1]
        let total = cube(self.entities(heads)) + cube(self.relations(rels)) + cube(self.entities(tails));
        total.div_scalar(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive f64 complex numbers for reference scores.
    type C = (f64, f64);
    fn cmul(a: C, b: C) -> C {
        (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
    }
    fn row(t: &Tensor<2>, i: usize) -> Vec<f64> {
        let [_, d] = t.dims();
        let v: Vec<f32> = t.clone().into_data().try_to_vec::<f32>().unwrap();
        v[i * d..(i + 1) * d].iter().map(|&x| x as f64).collect()
    }
    fn entity(m: &GraphModel, i: usize) -> Vec<C> {
        row(&m.ent_re.val(), i).into_iter().zip(row(&m.ent_im.val(), i)).collect()
    }
    fn relation(m: &GraphModel, r: usize) -> Vec<C> {
        let a = row(&m.rel_a.val(), r);
        match &m.rel_im {
            Some(im) => a.into_iter().zip(row(&im.val(), r)).collect(),
            None => a.into_iter().map(|t| (t.cos(), t.sin())).collect(),
        }
    }

    /// Score of (h, r, t) with loops over complex numbers, in f64.
    fn naive_score(m: &GraphModel, h: usize, r: usize, t: usize) -> f64 {
        let (h, r, t) = (entity(m, h), relation(m, r), entity(m, t));
        let mut s = 0.0;
        for i in 0..h.len() {
            let q = cmul(h[i], r[i]);
            s += match m.kind() {
                RelationKind::Complex => cmul(q, (t[i].0, -t[i].1)).0,
                RelationKind::Rotation => -((q.0 - t[i].0).powi(2) + (q.1 - t[i].1).powi(2)).sqrt(),
            };
        }
        s
    }

    fn model(kind: RelationKind) -> GraphModel {
        let cfg = GraphModelConfig { kind, dim: 5, init_scale: 0.7 };
        cfg.init(4, 6, 11, &Device::flex()).unwrap()
    }

    #[test]
    fn scores_match_naive_complex_loops() {
        for kind in [RelationKind::Complex, RelationKind::Rotation] {
            let m = model(kind);
            let dev = m.device();
            let (heads, rels) = ([0usize, 3, 2], [1usize, 5, 0]);
            let scores = m.score_all(m.query(ids(&heads, &dev), ids(&rels, &dev))); // [3, 4]
            let got: Vec<f32> = scores.into_data().try_to_vec::<f32>().unwrap();
            for (b, (&h, &r)) in heads.iter().zip(&rels).enumerate() {
                for t in 0..4 {
                    let want = naive_score(&m, h, r, t);
                    let g = got[b * 4 + t] as f64;
                    assert!(
                        (g - want).abs() < 1e-5 * (1.0 + want.abs()),
                        "{kind:?} {h} {r} {t}: {g} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn rotations_have_unit_modulus_and_compose_like_sequential_application() {
        let m = model(RelationKind::Rotation);
        let dev = m.device();
        let moduli: Vec<f32> =
            m.relations(ids(&[0, 1, 2, 3, 4, 5], &dev)).modulus().into_data().try_to_vec::<f32>().unwrap();
        assert!(moduli.iter().all(|&x| (x - 1.0).abs() < 1e-6));
        // (h ∘ r1) ∘ r2 equals h ∘ (r1 ∘ r2), and r1 ∘ r2 is the rotation by θ1 + θ2.
        let seq = m.apply(m.apply(m.entities(ids(&[2], &dev)), ids(&[1], &dev)), ids(&[4], &dev));
        let gate = m.relations(ids(&[1], &dev)).hadamard(m.relations(ids(&[4], &dev)));
        let composed = m.entities(ids(&[2], &dev)).hadamard(gate.clone());
        let theta: Vec<f32> = (m.rel_a.val().select(0, ids(&[1], &dev))
            + m.rel_a.val().select(0, ids(&[4], &dev)))
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
        let gre: Vec<f32> = gate.re.into_data().try_to_vec::<f32>().unwrap();
        for (g, t) in gre.iter().zip(&theta) {
            assert!((g - t.cos()).abs() < 1e-5);
        }
        for (a, b) in [(seq.re, composed.re), (seq.im, composed.im)] {
            let (a, b): (Vec<f32>, Vec<f32>) =
                (a.into_data().try_to_vec::<f32>().unwrap(), b.into_data().try_to_vec::<f32>().unwrap());
            assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6), "{a:?} {b:?}");
        }
    }

    #[test]
    fn n3_matches_naive_sum_of_cubed_moduli() {
        for kind in [RelationKind::Complex, RelationKind::Rotation] {
            let m = model(kind);
            let dev = m.device();
            let (h, r, t) = ([0usize, 1, 3], [2usize, 2, 5], [3usize, 0, 0]);
            let got = m.n3(ids(&h, &dev), ids(&r, &dev), ids(&t, &dev)).into_scalar::<f32>() as f64;
            let cube = |v: Vec<C>| v.iter().map(|c| (c.0 * c.0 + c.1 * c.1).powf(1.5)).sum::<f64>();
            let want: f64 = (0..3)
                .map(|b| cube(entity(&m, h[b])) + cube(relation(&m, r[b])) + cube(entity(&m, t[b])))
                .sum::<f64>()
                / 3.0;
            assert!((got - want).abs() < 1e-5 * want, "{kind:?}: {got} vs {want}");
        }
    }

    #[test]
    fn bad_config_names_the_field() {
        let err = GraphModelConfig { dim: 0, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("model.dim"), "{err}");
        let err =
            GraphModelConfig { init_scale: -1.0, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("model.init_scale"), "{err}");
    }
}
