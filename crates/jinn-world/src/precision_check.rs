//! Test helper for `train.precision = "bf16"`: one update of a task in bf16 against one in f32
//! from the same weights and batch.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{DType, Tensor};
use jinn_train::config::TrainConfig;
use jinn_train::train_loop::{StepContext, TrainTask, Updater};

/// (dtype, values) of every float parameter of `model`, in visiting order.
pub(crate) fn float_params<M: Module>(model: &M) -> Vec<(DType, Vec<f32>)> {
    struct Params(Vec<(DType, Vec<f32>)>);
    impl ModuleVisitor for Params {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            let t = p.val();
            self.0.push((t.dtype(), t.try_into_vec_as::<f32>().expect("float tensor data")));
        }
    }
    let mut params = Params(Vec::new());
    model.visit(&mut params);
    params.0
}

/// One update of `f32_task` and of `bf16_task` (built from the same weights, reading the same
/// batch): the metrics named by `keys` agree within 3 %, the bf16 loss is not the f32 one (it
/// was computed in bf16), the bf16 task's master weights stay f32, parameters the f32 update
/// leaves alone (frozen parts) stay put in bf16 too, and bf16 moves at least 90 % of those the
/// f32 update moves. (Not all: a parameter whose exact gradient is zero, such as an attention
/// key bias under softmax's shift invariance, gets rounding noise in one precision and an exact
/// zero in the other, and AdamW turns any nonzero gradient into a full step.)
pub(crate) fn bf16_step_matches_f32<T: TrainTask>(
    mut f32_task: T,
    mut bf16_task: T,
    train: &TrainConfig,
    keys: &[&str],
) {
    let before = float_params(f32_task.model());
    let ctx = StepContext { lr: 1e-2, clip_norm: Some(1.0), ..StepContext::new(train, 0, true) };
    let step = |task: &mut T| Updater::new(task, &train.optim).unwrap().step(task, &ctx).unwrap();
    let (m32, m16) = (step(&mut f32_task), step(&mut bf16_task));
    for key in keys {
        let (a, b) = (m32[*key], m16[*key]);
        assert!(b.is_finite(), "bf16 {key} = {b}");
        assert!((a - b).abs() <= 0.03 * a.abs(), "{key}: f32 {a} vs bf16 {b}");
    }
    assert_ne!(m32["loss"], m16["loss"], "the bf16 forward rounds differently");
    let (after32, after16) = (float_params(f32_task.model()), float_params(bf16_task.model()));
    assert_eq!(after16.len(), before.len());
    let (mut moved32, mut moved_both) = (0, 0);
    for (i, ((a16, a32), b)) in after16.iter().zip(&after32).zip(&before).enumerate() {
        assert_eq!(a16.0, DType::F32, "master weights stay f32");
        let (moved16, moved) = (a16.1 != b.1, a32.1 != b.1);
        assert!(moved || !moved16, "parameter {i}: bf16 moved it, f32 left it alone (frozen)");
        moved32 += usize::from(moved);
        moved_both += usize::from(moved && moved16);
    }
    assert!(moved32 > 0, "the update moved no parameter");
    assert!(10 * moved_both >= 9 * moved32, "bf16 moved {moved_both} of the {moved32} parameters f32 moved");
}
