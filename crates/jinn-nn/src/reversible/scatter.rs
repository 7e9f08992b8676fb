//! "Scatter": a fixed, seeded permutation of the feature channels applied after every coupling,
//! so that across depth every feature lands in both halves and gets transformed. It is exactly
//! invertible and volume-preserving (log-determinant 0).

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A fixed channel permutation over the last axis: `y[.., i] = x[.., perm[i]]`.
#[derive(Module, Debug)]
pub struct Scatter {
    /// Source channel of every output channel.
    pub permutation: Vec<usize>,
    /// Inverse permutation: `inverse[perm[i]] = i`.
    pub inverse: Vec<usize>,
}

impl Scatter {
    /// The permutation of `width` channels drawn from `seed` (ChaCha8, stable across platforms).
    pub fn seeded(width: usize, seed: u64) -> Self {
        let mut permutation: Vec<usize> = (0..width).collect();
        permutation.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let mut inverse = vec![0; width];
        for (i, &p) in permutation.iter().enumerate() {
            inverse[p] = i;
        }
        Self { permutation, inverse }
    }

    /// Permutes the last axis of `x` `[.., width]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        gather_channels(x, &self.permutation)
    }

    /// Undoes [`Scatter::forward`] on `y` `[.., width]`.
    pub fn inverse<const D: usize>(&self, y: Tensor<D>) -> Tensor<D> {
        gather_channels(y, &self.inverse)
    }
}

fn gather_channels<const D: usize>(x: Tensor<D>, order: &[usize]) -> Tensor<D> {
    let device: Device = x.device();
    let idx: Vec<i64> = order.iter().map(|&i| i as i64).collect();
    let idx = Tensor::<1, Int>::from_data(TensorData::new(idx, [order.len()]), &device); // [width]
    x.select(D - 1, idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation_and_inverts_exactly() {
        let device = Device::flex();
        let s = Scatter::seeded(10, 3);
        let mut sorted = s.permutation.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_ne!(s.permutation, (0..10).collect::<Vec<_>>(), "seed 3 should move channels");
        let x =
            Tensor::<2>::from_data(TensorData::new((0..20).map(|v| v as f32).collect(), [2, 10]), &device);
        let y: Vec<f32> = s.forward(x.clone()).try_into_vec_as().unwrap();
        for (got, &src) in y.iter().zip(&s.permutation) {
            assert_eq!(*got, src as f32);
        }
        let back: Vec<f32> = s.inverse(s.forward(x.clone())).try_into_vec_as().unwrap();
        assert_eq!(back, x.try_into_vec_as::<f32>().unwrap());
        assert_eq!(Scatter::seeded(10, 3).permutation, s.permutation, "same seed, same permutation");
    }
}
