//! The loss weights of the dynamics models' token loss ([`jinn_nn::ops::token_cross_entropy`]).

use burn::tensor::{Int, Tensor, TensorData};

/// `weight` `[B, T, N]` with every token that differs from the token at the same position one
/// frame earlier (frames `1..T`) scaled by `changed`; `weight` itself when `changed` is 1.
pub fn changed_token_weights(weight: Tensor<3>, tokens: &Tensor<3, Int>, changed: f64) -> Tensor<3> {
    if changed == 1.0 {
        return weight;
    }
    let [b, t, n] = tokens.dims();
    let ids: Vec<i64> =
        tokens.clone().into_data().convert::<i64>().try_into_vec::<i64>().expect("integer tokens");
    let scale: Vec<f32> = (0..b * t * n)
        .map(|i| {
            let frame = (i / n) % t;
            if frame > 0 && ids[i] != ids[i - n] {
                changed as f32
            } else {
                1.0
            }
        })
        .collect();
    let device = weight.device();
    weight * Tensor::<3>::from_data(TensorData::new(scale, [b, t, n]), &device)
}
