//! Averaging gradients over ranks through flat buckets.
//!
//! One all-reduce per parameter tensor would pay the collective's latency hundreds of times
//! a step, so the gradients of every float parameter are copied, in the model's visiting order
//! (the same on every rank), into one host `f32` stream that is all-reduced in contiguous
//! buckets of [`BUCKET_BYTES`]. A parameter without a gradient on some rank (unused by its
//! micro-batches) contributes zeros there; one presence flag per parameter travels at the end
//! of the stream so that a parameter without a gradient on every rank stays without one. The
//! average is the sum divided by the number of ranks: each rank's gradient is the mean over
//! its equal share of the global batch, so this is the gradient of the global-batch mean.

use super::Collective;
use crate::error::{Result, TrainError};
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Shape, Tensor, TensorData};

/// Bytes of gradient per all-reduce call (4 MiB = 1 Mi `f32`).
pub const BUCKET_BYTES: usize = 4 << 20;

/// Replace every gradient in `grads` (of `model`'s float parameters) by its mean over the ranks
/// of `group`, all-reducing [`BUCKET_BYTES`] at a time. Every rank must call it at the same
/// point with the same model architecture. A no-op with one rank.
pub fn average_gradients<M: Module>(
    model: &M,
    grads: &mut GradientsParams,
    group: &dyn Collective,
) -> Result<()> {
    average_gradients_in_buckets(model, grads, group, BUCKET_BYTES / size_of::<f32>())
}

/// [`average_gradients`] with buckets of `bucket_len` floats (tests use tiny buckets so that
/// parameters straddle bucket boundaries).
pub fn average_gradients_in_buckets<M: Module>(
    model: &M,
    grads: &mut GradientsParams,
    group: &dyn Collective,
    bucket_len: usize,
) -> Result<()> {
    if group.size() <= 1 {
        return Ok(());
    }
    let mut gather = Gather { grads, slots: Vec::new(), flat: Vec::new(), error: None };
    model.visit(&mut gather);
    let Gather { slots, mut flat, error, .. } = gather;
    if let Some(e) = error {
        return Err(e);
    }
    let values = flat.len();
    flat.extend(slots.iter().map(|s| if s.local.is_some() { 1.0 } else { 0.0 }));
    for bucket in flat.chunks_mut(bucket_len.max(1)) {
        group.all_reduce_sum_f32(bucket)?;
    }
    let (values, presence) = flat.split_at(values);
    let fallback = slots.iter().find_map(|s| s.local.clone());
    let mut scatter = Scatter {
        grads,
        slots: slots.iter(),
        values,
        presence: presence.iter(),
        scale: 1.0 / group.size() as f32,
        fallback,
        error: None,
    };
    model.visit(&mut scatter);
    scatter.error.map_or(Ok(()), Err)
}

/// Where one parameter's gradient lies in the flat stream.
struct Slot {
    id: ParamId,
    offset: usize,
    shape: Shape,
    /// Device and dtype of this rank's gradient; `None` when this rank has none.
    local: Option<(Device, DType)>,
}

/// Copies every float parameter's gradient (zeros when absent) into `flat`.
struct Gather<'a> {
    grads: &'a GradientsParams,
    slots: Vec<Slot>,
    flat: Vec<f32>,
    error: Option<TrainError>,
}

impl ModuleVisitor for Gather<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let shape = param.lazy_shape();
        let offset = self.flat.len();
        let local = match self.grads.get::<D>(param.id) {
            Some(g) => {
                let meta = (g.device(), g.dtype());
                match g.try_into_vec_as::<f32>() {
                    Ok(values) => self.flat.extend_from_slice(&values),
                    Err(e) => {
                        self.error.get_or_insert(TrainError::distributed(format!(
                            "reading the gradient of parameter {} for the all-reduce: {e}",
                            param.id
                        )));
                        self.flat.resize(offset + shape.num_elements(), 0.0);
                    }
                }
                Some(meta)
            }
            None => {
                self.flat.resize(offset + shape.num_elements(), 0.0);
                None
            }
        };
        self.slots.push(Slot { id: param.id, offset, shape, local });
    }
}

/// Writes the summed stream back into `grads`, scaled to the mean.
struct Scatter<'a, 's> {
    grads: &'a mut GradientsParams,
    slots: std::slice::Iter<'s, Slot>,
    values: &'s [f32],
    presence: std::slice::Iter<'s, f32>,
    scale: f32,
    /// Device and dtype for a parameter that has a gradient elsewhere but not on this rank.
    fallback: Option<(Device, DType)>,
    error: Option<TrainError>,
}

impl ModuleVisitor for Scatter<'_, '_> {
    fn visit_float<const D: usize>(&mut self, _param: &Param<Tensor<D>>) {
        let (Some(slot), Some(&ranks_with_grad)) = (self.slots.next(), self.presence.next()) else {
            return;
        };
        if ranks_with_grad == 0.0 {
            return;
        }
        let Some((device, dtype)) = slot.local.clone().or_else(|| self.fallback.clone()) else {
            self.error.get_or_insert(TrainError::distributed(format!(
                "parameter {} has a gradient on another rank but this rank computed no gradient at all",
                slot.id
            )));
            return;
        };
        let n = slot.shape.num_elements();
        let mean: Vec<f32> =
            self.values[slot.offset..slot.offset + n].iter().map(|v| v * self.scale).collect();
        let tensor = Tensor::<D>::from_data(TensorData::new(mean, slot.shape.clone()), (&device, dtype));
        self.grads.remove::<D>(slot.id);
        self.grads.register(slot.id, tensor);
    }
}
