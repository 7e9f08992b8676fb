//! Helpers shared by this crate's tests.

use burn::tensor::Tensor;

/// A float tensor's values on the host, row-major.
pub(crate) fn to_vec<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}
