use super::*;
use burn::tensor::{Device, Int, TensorData};

/// A causal "model" with a visible position effect: output frame `t` of a clip is
/// `Σ_{s ≤ t} x[s] + 100·t` (frame-local position `t`), per batch entry.
fn prefix_sums_with_position(x: Tensor<3>) -> Result<Tensor<3>, NnError> {
    let [b, t, n] = x.dims();
    let host: Vec<f32> = x.try_into_vec_as::<f32>().unwrap();
    let mut out = vec![0.0f32; host.len()];
    for bi in 0..b {
        for j in 0..n {
            let mut acc = 0.0;
            for ti in 0..t {
                acc += host[(bi * t + ti) * n + j];
                out[(bi * t + ti) * n + j] = acc + 100.0 * ti as f32;
            }
        }
    }
    Ok(Tensor::from_data(TensorData::new(out, [b, t, n]), &Device::flex()))
}

#[test]
fn windowed_frames_see_only_their_window_at_trained_positions() {
    let (b, t, n, w) = (2usize, 7usize, 3usize, 3usize);
    let x: Vec<f32> = (0..b * t * n).map(|i| (i % 11) as f32).collect();
    let input = Tensor::<3>::from_data(TensorData::new(x.clone(), [b, t, n]), &Device::flex());
    let got: Vec<f32> =
        windowed(input, Some(w), prefix_sums_with_position).unwrap().try_into_vec_as().unwrap();
    for bi in 0..b {
        for ti in 0..t {
            for j in 0..n {
                let first = (ti + 1).saturating_sub(w);
                let sum: f32 = (first..=ti).map(|s| x[(bi * t + s) * n + j]).sum();
                let want = sum + 100.0 * (ti - first) as f32;
                assert_eq!(got[(bi * t + ti) * n + j], want, "entry {bi} frame {ti} feature {j}");
            }
        }
    }
}

#[test]
fn a_clip_within_the_window_goes_through_whole() {
    let x = Tensor::<3>::from_data(
        TensorData::new((0..12).map(|i| i as f32).collect::<Vec<_>>(), [1, 4, 3]),
        &Device::flex(),
    );
    let whole = prefix_sums_with_position(x.clone()).unwrap().into_data();
    windowed(x.clone(), Some(4), prefix_sums_with_position).unwrap().into_data().assert_eq(&whole, true);
    windowed(x.clone(), None, prefix_sums_with_position).unwrap().into_data().assert_eq(&whole, true);
    assert!(windowed(x, Some(1), prefix_sums_with_position).is_err());
}

#[test]
fn a_lagged_integer_output_keeps_one_entry_per_later_frame() {
    // A "LAM" over integer frames: transition t (into frame t + 1) is x[t+1] − x[t] plus
    // 10 × its in-window index, so the window's positions show.
    let transitions = |x: Tensor<2, Int>| -> Result<Tensor<2, Int>, NnError> {
        let [b, t] = x.dims();
        let positions: Vec<i64> = (0..b).flat_map(|_| 0..t as i64 - 1).collect();
        let idx = Tensor::<2, Int>::from_data(TensorData::new(positions, [b, t - 1]), &x.device());
        Ok(x.clone().narrow(1, 1, t - 1) - x.narrow(1, 0, t - 1) + idx * 10)
    };
    let x =
        Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 3, 6, 10, 15], [1, 6]), &Device::flex());
    let got: Vec<i64> = windowed(x, Some(3), transitions).unwrap().try_into_vec_as().unwrap();
    // First window (frames 0..3): transitions 1, 2 at positions 0, 1; later ones at position 1.
    assert_eq!(got, vec![1, 12, 13, 14, 15]);
}
