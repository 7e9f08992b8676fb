use super::*;
use crate::metrics_log::{read_metrics, METRICS_FILE};
use crate::optim::{clip_global_norm, OptimConfig};
use crate::schedule::{LrSchedule, ScheduleKind};
use burn::module::{ModuleVisitor, Param};
use burn::nn::Linear;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Device, Tensor, TensorData};
use rand::Rng;

/// Linear regression onto y = x·[1, −2, 3] with batches drawn from (seed, step, micro).
struct Regression {
    device: Device,
    model: Linear,
    /// `StepContext::logged` of every step this task ran.
    logged: Vec<bool>,
    /// Weighted objectives: micro-batch `m` keeps the first `m + 1` rows of its batch and
    /// reports its mean loss over them with that weight.
    weighted: bool,
}

impl Regression {
    fn new(init_seed: u64) -> Regression {
        let device = Device::flex().autodiff();
        // Deterministic init from (init_seed): the backend RNG may be process-global.
        let mut rng = jinn_data::rng::rng_for(init_seed, "init", 0);
        let w: Vec<f32> = (0..3).map(|_| rng.random_range(-0.5..0.5)).collect();
        Regression {
            model: Linear {
                weight: Param::from_data(TensorData::new(w, [3, 1]), &device),
                bias: Some(Param::from_data(TensorData::new(vec![0.1f32], [1]), &device)),
            },
            device,
            logged: Vec::new(),
            weighted: false,
        }
    }

    fn batch(&self, seed: u64, purpose: &str, index: u64) -> (Tensor<2>, Tensor<2>) {
        let mut rng = jinn_data::rng::rng_for(seed, purpose, index);
        let xs: Vec<f32> = (0..12).map(|_| rng.random_range(-1.0..1.0)).collect();
        let ys: Vec<f32> = xs.chunks(3).map(|r| r[0] - 2.0 * r[1] + 3.0 * r[2]).collect();
        (
            Tensor::from_data(TensorData::new(xs, [4, 3]), &self.device), // [b, 3]
            Tensor::from_data(TensorData::new(ys, [4, 1]), &self.device), // [b, 1]
        )
    }

    fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
        (self.model.forward(x) - y).square().mean()
    }
}

impl TrainTask for Regression {
    type Model = Linear;

    fn kind(&self) -> &str {
        "regression"
    }

    fn model(&self) -> &Linear {
        &self.model
    }

    fn set_model(&mut self, model: Linear) {
        self.model = model;
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        if ctx.micro == 0 {
            self.logged.push(ctx.logged);
        }
        let (x, y) = self.batch(ctx.seed, "train-batch", ctx.step * 1000 + ctx.micro as u64);
        if self.weighted {
            let rows = ctx.micro + 1;
            let loss = self.loss(x.slice([0..rows, 0..3]), y.slice([0..rows, 0..1]));
            let metrics = Metrics::from([("loss".to_string(), loss.clone().into_scalar::<f32>() as f64)]);
            return Ok(MicroBatch {
                objective: Objective::WeightedLoss { loss, weight: rows as f64 },
                metrics,
            });
        }
        let loss = self.loss(x, y);
        let value = loss.clone().into_scalar::<f32>() as f64;
        Ok(MicroBatch {
            objective: Objective::Loss(loss),
            metrics: Metrics::from([("loss".to_string(), value)]),
        })
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let mut total = 0.0;
        for i in 0..batches {
            let (x, y) = self.batch(0, "val-batch", i as u64);
            total += self.loss(x, y).into_scalar::<f32>() as f64;
        }
        Ok(Metrics::from([("loss".to_string(), total / batches as f64)]))
    }
}

fn bits(model: &Linear) -> Vec<u32> {
    struct Bits(Vec<u32>);
    impl ModuleVisitor for Bits {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            self.0.extend(p.val().into_data().try_to_vec::<f32>().unwrap().into_iter().map(f32::to_bits));
        }
    }
    let mut b = Bits(Vec::new());
    model.visit(&mut b);
    b.0
}

fn train_cfg() -> TrainConfig {
    TrainConfig {
        steps: 8,
        batch_size: 8,
        grad_accum: 2,
        seed: 3,
        lr: LrSchedule {
            kind: ScheduleKind::Wsd,
            init_lr: 0.0,
            max_lr: 0.05,
            decay_end: 0.0,
            warmup_steps: 2,
            decay_steps: 2,
        },
        optim: OptimConfig { weight_decay: 0.1, ..OptimConfig::default() },
        clip_norm: Some(0.5),
        log_every: 1,
        val_every: 4,
        val_batches: 2,
        image_every: 0,
        ckpt_every: 2,
        keep_last: 2,
        keep_every: 4,
        precision: Default::default(),
        local_ranks: 1,
    }
}

fn opts(dir: &Path, resume: bool, stop_at: Option<u64>) -> RunOptions {
    RunOptions {
        run_dir: dir.to_path_buf(),
        config_json: serde_json::json!({"model": {"d": 3}}),
        resume,
        stop_at,
        metrics_head_len: 4,
    }
}

/// The update written out by hand: accumulate `loss / grad_accum` over the micro-batches,
/// clip, one AdamW step.
fn reference_update(
    task: &mut Regression,
    optim: &mut burn::optim::ModuleOptimizer,
    ctx: &StepContext,
) -> f64 {
    let mut acc = GradientsAccumulator::<Linear>::new();
    let mut total = 0.0;
    for micro in 0..ctx.grad_accum {
        let (x, y) = task.batch(ctx.seed, "train-batch", ctx.step * 1000 + micro as u64);
        let loss = task.loss(x, y);
        total += loss.clone().into_scalar::<f32>() as f64 / ctx.grad_accum as f64;
        let loss = loss.div_scalar(ctx.grad_accum as f64);
        acc.accumulate(&task.model, GradientsParams::from_grads(loss.backward(), &task.model));
    }
    let mut grads = acc.grads();
    clip_global_norm(&task.model, &mut grads, ctx.clip_norm.unwrap());
    task.model = optim.step(ctx.lr, task.model.clone(), grads);
    total
}

#[test]
fn the_loops_update_equals_the_update_written_out_by_hand() {
    let cfg = train_cfg(); // grad_accum 2, clipping at 0.5
    let (mut by_loop, mut by_hand) = (Regression::new(1), Regression::new(1));
    let mut updater = Updater::new(&by_loop, &cfg.optim).unwrap();
    let mut optim = cfg.optim.init_for(&by_hand.model).unwrap();
    for step in 0..4 {
        let ctx = StepContext::new(&cfg, step, true);
        let metrics = updater.step(&mut by_loop, &ctx).unwrap();
        let loss = reference_update(&mut by_hand, &mut optim, &ctx);
        assert_eq!(bits(&by_loop.model), bits(&by_hand.model), "step {step}");
        assert!((metrics["loss"] - loss).abs() < 1e-12, "step {step}: {} vs {loss}", metrics["loss"]);
        assert!(metrics["grad_norm"] > 0.0);
    }
}

/// Weighted micro-batches of 1 and 2 rows give the gradient of one batch of all 3 rows (the
/// mean over every row), not the mean of the micro-batches' means.
#[test]
fn weighted_micro_batches_give_the_gradient_of_their_pooled_batch() {
    let cfg = train_cfg(); // grad_accum 2
    let ctx = StepContext::new(&cfg, 1, true);
    let mut weighted = Regression { weighted: true, ..Regression::new(1) };
    let (grads, _) = step_gradients(&mut weighted, &ctx).unwrap();

    let reference = Regression::new(1);
    let (x0, y0) = reference.batch(ctx.seed, "train-batch", 1000);
    let (x1, y1) = reference.batch(ctx.seed, "train-batch", 1001);
    let x = Tensor::cat(vec![x0.slice([0..1, 0..3]), x1.slice([0..2, 0..3])], 0); // [3, 3]
    let y = Tensor::cat(vec![y0.slice([0..1, 0..1]), y1.slice([0..2, 0..1])], 0); // [3, 1]
    let loss = reference.loss(x.clone(), y.clone());
    let pooled = GradientsParams::from_grads(loss.backward(), &reference.model);
    // The mean of the two micro-batches' means, for contrast.
    let first = reference.loss(x.clone().slice([0..1, 0..3]), y.clone().slice([0..1, 0..1]));
    let second = reference.loss(x.slice([1..3, 0..3]), y.slice([1..3, 0..1]));
    let mean_of_means = GradientsParams::from_grads(((first + second) / 2.0).backward(), &reference.model);

    let weight_grad = |g: &GradientsParams, m: &Linear| -> Vec<f32> {
        g.get::<2>(m.weight.id).unwrap().into_data().try_to_vec::<f32>().unwrap()
    };
    let got = weight_grad(&grads, &weighted.model);
    let want = weight_grad(&pooled, &reference.model);
    let other = weight_grad(&mean_of_means, &reference.model);
    for (a, b) in got.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{got:?} vs {want:?}");
    }
    assert!(got.iter().zip(&other).any(|(a, b)| (a - b).abs() > 1e-3), "{got:?} vs {other:?}");
}

#[test]
fn interrupted_and_resumed_run_equals_uninterrupted_bit_for_bit() {
    let cfg = train_cfg();
    let full_dir = tempfile::tempdir().unwrap();
    let mut full = Regression::new(1);
    let summary = run(&mut full, &cfg, &opts(full_dir.path(), false, None)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (0, 8));

    let split_dir = tempfile::tempdir().unwrap();
    let mut first = Regression::new(1);
    run(&mut first, &cfg, &opts(split_dir.path(), false, Some(5))).unwrap();
    // A new process: a differently initialised model, resumed from the step-5 checkpoint.
    let mut second = Regression::new(99);
    let summary = run(&mut second, &cfg, &opts(split_dir.path(), true, None)).unwrap();
    assert_eq!((summary.start_step, summary.end_step), (5, 8));
    assert_eq!(bits(&second.model), bits(&full.model));
    assert_ne!(bits(&Regression::new(1).model), bits(&full.model), "training moved the weights");

    // Logs read like one run; retention kept the last 2 and the multiples of 4.
    let steps: Vec<(u64, String)> = read_metrics(&split_dir.path().join(METRICS_FILE))
        .unwrap()
        .into_iter()
        .map(|r| (r.step, r.split))
        .collect();
    let full_steps: Vec<(u64, String)> = read_metrics(&full_dir.path().join(METRICS_FILE))
        .unwrap()
        .into_iter()
        .map(|r| (r.step, r.split))
        .collect();
    assert_eq!(steps, full_steps);
    assert_eq!(crate::checkpoint::list_steps(full_dir.path()).unwrap(), vec![4, 6, 8]);
    let last = latest_good(full_dir.path()).unwrap().checkpoint.unwrap();
    assert_eq!(last.state.metrics_head.last().unwrap().step, 8);
}

/// A step is announced as logged exactly when the loop then logs it: every `log_every`
/// updates and at the end, also when `stop_at` ends the run early.
#[test]
fn steps_announced_as_logged_are_the_logged_ones() {
    let cfg = TrainConfig { log_every: 3, ..train_cfg() };
    let dir = tempfile::tempdir().unwrap();
    let mut task = Regression::new(1);
    run(&mut task, &cfg, &opts(dir.path(), false, Some(5))).unwrap();
    assert_eq!(task.logged, [false, false, true, false, true]);
    let logged: Vec<u64> = read_metrics(&dir.path().join(METRICS_FILE))
        .unwrap()
        .into_iter()
        .filter(|r| r.split == "train")
        .map(|r| r.step)
        .collect();
    assert_eq!(logged, [3, 5], "records carry the step count after the update");
}

#[test]
fn resuming_another_model_kind_is_refused() {
    let cfg = train_cfg();
    let dir = tempfile::tempdir().unwrap();
    run(&mut Regression::new(1), &cfg, &opts(dir.path(), false, Some(2))).unwrap();
    let mut other = opts(dir.path(), true, None);
    other.config_json = serde_json::json!({"model": {"d": 4}});
    let err = run(&mut Regression::new(1), &cfg, &other).unwrap_err().to_string();
    assert!(err.contains("model.d"), "{err}");
}

#[test]
fn a_precision_the_task_does_not_train_in_is_a_config_error_not_a_silent_f32() {
    let mut cfg = train_cfg();
    cfg.precision = Precision::Bf16;
    let dir = tempfile::tempdir().unwrap();
    let err = run(&mut Regression::new(1), &cfg, &opts(dir.path(), false, Some(2))).unwrap_err().to_string();
    assert!(err.contains("train.precision") && err.contains("f32 only"), "{err}");
    assert!(!dir.path().join(METRICS_FILE).exists(), "nothing trained: {err}");
}

/// Records every observer call.
#[derive(Default)]
struct Recorder {
    start: Option<(u64, u64)>,
    steps: Vec<(u64, u64, u64, f64)>, // (step, start, end, loss)
    validations: Vec<u64>,
    finished: Option<u64>,
}

impl RunObserver for Recorder {
    fn on_start(&mut self, start_step: u64, end_step: u64) {
        self.start = Some((start_step, end_step));
    }
    fn on_step(&mut self, r: &StepReport<'_>) {
        assert!(r.metrics.contains_key("lr"));
        self.steps.push((r.step, r.start_step, r.end_step, r.metrics["loss"]));
    }
    fn on_validation(&mut self, step: u64, metrics: &Metrics) {
        assert!(metrics.contains_key("loss"));
        self.validations.push(step);
    }
    fn on_finish(&mut self, summary: &RunSummary) {
        self.finished = Some(summary.end_step);
    }
}

#[test]
fn observer_sees_every_step_validation_and_the_end() {
    let cfg = train_cfg(); // 8 steps, validation every 4
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::default();
    run_observed(&mut Regression::new(1), &cfg, &opts(dir.path(), false, Some(6)), &mut rec).unwrap();
    assert_eq!(rec.start, Some((0, 6)));
    assert_eq!(rec.steps.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
    assert!(rec.steps.iter().all(|s| s.1 == 0 && s.2 == 6 && s.3.is_finite()));
    assert_eq!(rec.validations, vec![4]);
    assert_eq!(rec.finished, Some(6));

    // Resumed: steps continue from the checkpoint at 6.
    let mut rec = Recorder::default();
    run_observed(&mut Regression::new(1), &cfg, &opts(dir.path(), true, None), &mut rec).unwrap();
    assert_eq!(rec.start, Some((6, 8)));
    assert_eq!(rec.steps.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(), vec![(7, 6), (8, 6)]);
    assert_eq!(rec.validations, vec![8]);
    // The logged train losses are the ones the observer saw.
    let logged = read_metrics(&dir.path().join(METRICS_FILE)).unwrap();
    let loss7 = logged.iter().find(|r| r.split == "train" && r.step == 7).unwrap().metrics["loss"];
    assert_eq!(loss7, rec.steps[0].3);
}

#[test]
fn a_model_on_the_cpu_backend_is_on_the_cpu() {
    assert!(runs_on_cpu(&Regression::new(1).model), "autodiff over the CPU backend");
    let plain = Linear {
        weight: Param::from_data(TensorData::new(vec![0.5f32; 3], [3, 1]), &Device::flex()),
        bias: None,
    };
    assert!(runs_on_cpu(&plain));
}

#[test]
fn thread_ranks_in_the_config_without_the_ranks_are_refused_not_run_on_half_a_batch() {
    let cfg = TrainConfig { local_ranks: 2, ..train_cfg() }; // batch 8, grad_accum 2
    assert_eq!(cfg.rank_micro_batch(), 2);
    let dir = tempfile::tempdir().unwrap();
    let err = run(&mut Regression::new(1), &cfg, &opts(dir.path(), false, None)).unwrap_err().to_string();
    assert!(err.contains("train.local_ranks") && err.contains("1 rank"), "{err}");
    let err = TrainConfig { local_ranks: 3, ..train_cfg() }.validate().unwrap_err().to_string();
    assert!(err.contains("train.local_ranks") && err.contains("train.batch_size (8)"), "{err}");
}
