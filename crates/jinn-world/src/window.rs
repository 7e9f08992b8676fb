//! Running temporally causal models over clips longer than they were trained on.
//!
//! Every part of a world model (tokenizer, LAM, dynamics) attends causally over time with
//! sinusoidal frame positions, and sees positions only up to its training clip length. A
//! longer clip goes through in windows of that length: frame `t` past the window is computed
//! from frames `t − window + 1 ..= t`, at the positions the model was trained on. The dynamics
//! sampler slides the same way ([`crate::SamplerConfig::window`]).

use burn::tensor::kind::Basic;
use burn::tensor::Tensor;
use jinn_nn::NnError;
use std::path::Path;

/// The clip length (frames) a run's models were trained on: its newest good checkpoint's
/// stored `data.seq_len`, if it records one.
pub fn trained_clip_frames(run_dir: &Path) -> Option<usize> {
    let ckpt = jinn_train::checkpoint::latest_good(run_dir).ok()?.checkpoint?;
    ckpt.state.config.get("data")?.get("seq_len")?.as_u64().map(|v| v as usize)
}

/// `f` over the clip `input` `[B, T, …]`, seeing at most `window` frames at once (`None`: all).
/// `f` maps a clip `[B, T', …]` to per-frame outputs `[B, T' − lag, …]` whose last entry
/// belongs to the clip's last frame (a decoder: lag 0; a LAM's transitions: lag 1) and must be
/// causal in time. The first `window` frames go through in one call; every later frame's
/// output is the last entry of `f` on the `window` frames ending at it (all such windows in one
/// batched call).
pub fn windowed<const DI: usize, const DO: usize, KI, KO>(
    input: Tensor<DI, KI>,
    window: Option<usize>,
    f: impl Fn(Tensor<DI, KI>) -> Result<Tensor<DO, KO>, NnError>,
) -> Result<Tensor<DO, KO>, NnError>
where
    KI: Basic,
    KO: Basic,
{
    let [b, t] = [input.dims()[0], input.dims()[1]];
    let w = match window {
        Some(w) if w < 2 => {
            return Err(NnError::InvalidConfig { field: "window", reason: format!("must be ≥ 2, got {w}") })
        }
        Some(w) if t > w => w,
        _ => return f(input),
    };
    let head = f(input.clone().narrow(1, 0, w))?; // [b, w − lag, …]
    let tails: Vec<Tensor<DI, KI>> = (w..t).map(|end| input.clone().narrow(1, end + 1 - w, w)).collect();
    let out = f(Tensor::cat(tails, 0))?; // [(t − w)·b, w − lag, …]
    let last = out.dims()[1] - 1;
    let mut dims = out.dims();
    dims[0] = t - w;
    dims[1] = b;
    let tail = out.narrow(1, last, 1).reshape(dims).swap_dims(0, 1); // [b, t − w, …]
    Ok(Tensor::cat(vec![head, tail], 1))
}

#[cfg(test)]
mod tests;
