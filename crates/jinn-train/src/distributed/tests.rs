//! In-process checks of the data-parallel pieces: ranks are threads joined by [`ThreadRanks`]
//! (the MPI runs themselves are tested by `crates/jinn/tests/mpi.rs` under `mpirun`).

use super::gradients::average_gradients_in_buckets;
use super::threads::ThreadRanks;
use super::*;
use crate::optim::OptimConfig;
use crate::train_loop::{average_metrics, Metrics};
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

/// Run `f(group)` on every rank of a `size`-rank [`ThreadRanks`] group, results in rank order.
fn on_ranks<T: Send>(size: usize, f: impl Fn(ThreadRanks) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadRanks::group(size).into_iter().map(|g| s.spawn(|| f(g))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// A weight `[3, 2]`, a bias `[2]`, and a parameter used only when asked.
#[derive(Module, Debug)]
struct Net {
    w: Param<Tensor<2>>,
    b: Param<Tensor<1>>,
    extra: Param<Tensor<1>>,
}

impl Net {
    fn new(device: &Device) -> Net {
        Net {
            w: Param::from_data([[0.5f32, -1.0], [0.25, 2.0], [-0.75, 0.1]], device),
            b: Param::from_data([0.3f32, -0.2], device),
            extra: Param::from_data([1.5f32], device),
        }
    }

    /// Mean squared output of `x` `[n, 3]`; `extra` scales it when `use_extra`.
    fn loss(&self, x: Tensor<2>, use_extra: bool) -> Tensor<1> {
        let out = x.matmul(self.w.val()) + self.b.val().unsqueeze_dim::<2>(0); // [n, 2]
        let out = if use_extra { out * self.extra.val().unsqueeze_dim::<2>(0) } else { out };
        out.square().mean()
    }
}

/// Rows `[first, first + n)` of a fixed `[8, 3]` input.
fn rows(first: usize, n: usize, device: &Device) -> Tensor<2> {
    let all: Vec<f32> = (0..24).map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0).collect();
    Tensor::from_data(TensorData::new(all[first * 3..(first + n) * 3].to_vec(), [n, 3]), device)
}

/// Every gradient of `net` as host values, `None` where absent.
fn grad_values(net: &Net, grads: &GradientsParams) -> Vec<Option<Vec<f32>>> {
    struct Read<'a>(&'a GradientsParams, Vec<Option<Vec<f32>>>);
    impl ModuleVisitor for Read<'_> {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            self.1.push(self.0.get::<D>(p.id).map(|g| g.into_data().try_to_vec::<f32>().unwrap()));
        }
    }
    let mut r = Read(grads, Vec::new());
    net.visit(&mut r);
    r.1
}

fn param_values(net: &Net) -> Vec<f32> {
    struct Read(Vec<f32>);
    impl ModuleVisitor for Read {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            self.0.extend(p.val().into_data().try_to_vec::<f32>().unwrap());
        }
    }
    let mut r = Read(Vec::new());
    net.visit(&mut r);
    r.0
}

#[test]
fn bucketed_average_equals_the_mean_of_each_ranks_gradients() {
    // Rank r computes gradients on rows [4r, 4r + 4); only rank 1 uses `extra`.
    let device = Device::flex().autodiff();
    let local = |rank: usize| {
        let net = Net::new(&device);
        let grads =
            GradientsParams::from_grads(net.loss(rows(4 * rank, 4, &device), rank == 1).backward(), &net);
        grad_values(&net, &grads)
    };
    let (g0, g1) = (local(0), local(1));
    assert!(g0[2].is_none() && g1[2].is_some(), "the test needs `extra` unused on rank 0");
    // Naive reference: per element, (g0 + g1) / 2 in f64, a missing gradient counting as zero.
    let want: Vec<Vec<f64>> = (0..3)
        .map(|p| {
            let len = g1[p].as_ref().unwrap().len();
            let at = |g: &Option<Vec<f32>>, i: usize| g.as_ref().map_or(0.0, |v| v[i] as f64);
            (0..len).map(|i| (at(&g0[p], i) + at(&g1[p], i)) / 2.0).collect()
        })
        .collect();
    // Buckets of 4 floats: `w` (6 values) straddles a bucket boundary.
    for bucket_len in [1usize, 4, 1 << 20] {
        let got = on_ranks(2, |group| {
            let net = Net::new(&device);
            let r = group.rank();
            let mut grads =
                GradientsParams::from_grads(net.loss(rows(4 * r, 4, &device), r == 1).backward(), &net);
            average_gradients_in_buckets(&net, &mut grads, &group, bucket_len).unwrap();
            grad_values(&net, &grads)
        });
        for (rank, g) in got.iter().enumerate() {
            for (p, want) in want.iter().enumerate() {
                let g = g[p].as_ref().unwrap_or_else(|| panic!("rank {rank} param {p} lost its gradient"));
                for (a, b) in g.iter().zip(want) {
                    assert!(
                        (*a as f64 - b).abs() <= 1e-6 * b.abs().max(1e-3),
                        "bucket {bucket_len} rank {rank}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_parameter_without_gradients_on_every_rank_stays_without() {
    let device = Device::flex().autodiff();
    let got = on_ranks(3, |group| {
        let net = Net::new(&device);
        let r = group.rank();
        let mut grads =
            GradientsParams::from_grads(net.loss(rows(2 * r, 2, &device), false).backward(), &net);
        average_gradients_in_buckets(&net, &mut grads, &group, 5).unwrap();
        grad_values(&net, &grads)
    });
    assert!(got.iter().all(|g| g[2].is_none() && g[0].is_some() && g[1].is_some()));
}

#[test]
fn two_ranks_of_half_batches_train_like_one_rank_of_the_whole_batch() {
    // AdamW steps: 2 ranks × rows [4r, 4r+4) vs 1 rank × rows [0, 8) (mean loss over 8).
    let device = Device::flex().autodiff();
    let optim_cfg = OptimConfig { weight_decay: 0.01, ..OptimConfig::default() };
    let train = |rank: usize, per_rank: usize, group: Option<&dyn Collective>| {
        let mut net = Net::new(&device);
        let mut optim = optim_cfg.init().unwrap();
        for _ in 0..5 {
            let mut grads = GradientsParams::from_grads(
                net.loss(rows(rank * per_rank, per_rank, &device), true).backward(),
                &net,
            );
            if let Some(g) = group {
                average_gradients(&net, &mut grads, g).unwrap();
            }
            net = optim.step(0.05, net, grads);
        }
        param_values(&net)
    };
    let single = train(0, 8, None);
    let pair = on_ranks(2, |group| train(group.rank(), 4, Some(&group)));
    assert_eq!(pair[0], pair[1], "both ranks must hold identical parameters");
    for (a, b) in pair[0].iter().zip(&single) {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-2), "{a} vs {b}");
    }
    assert_ne!(single, param_values(&Net::new(&device)), "the parameters must have moved");
}

#[test]
fn ranks_that_disagree_are_told_and_metrics_are_averaged() {
    let same = on_ranks(3, |g| ensure_same_on_all_ranks(&g, 40, "the step").is_ok());
    assert_eq!(same, [true; 3]);
    let errs = on_ranks(2, |g| ensure_same_on_all_ranks(&g, 10 * g.rank() as u64, "the step").unwrap_err());
    assert!(errs.iter().all(|e| e.to_string().contains("ranks disagree on the step")), "{errs:?}");

    let means = on_ranks(2, |g| {
        let mut m = Metrics::from([("loss".to_string(), 1.0 + g.rank() as f64), ("psnr".to_string(), 30.0)]);
        average_metrics(&g, &mut m).unwrap();
        m
    });
    assert_eq!(means[0], Metrics::from([("loss".to_string(), 1.5), ("psnr".to_string(), 30.0)]));
    assert_eq!(means[0], means[1]);
    let mismatch = on_ranks(2, |g| {
        let mut m = Metrics::from([("loss".to_string(), 1.0)]);
        if g.rank() == 1 {
            m.insert("grad_norm".into(), 2.0);
        }
        average_metrics(&g, &mut m).is_err()
    });
    assert_eq!(mismatch, [true, true]);
}

#[test]
fn without_a_group_this_process_is_rank_zero_of_one() {
    assert_eq!((rank(), world_size(), is_leader()), (0, 1, true));
    assert!(collective().is_none());
    let mut counts = [3, 0, 5];
    sum_counts_over_ranks(&mut counts).unwrap();
    assert_eq!(counts, [3, 0, 5]);
    assert_eq!(gather_over_ranks(&[1.5, -2.0]).unwrap(), [1.5, -2.0]);
}

#[test]
fn counts_sum_and_rows_gather_in_rank_order_on_every_rank() {
    let out = on_ranks(3, |g| {
        let r = g.rank() as u64;
        let mut counts = [r, 10 * r, 7];
        sum_counts(&g, &mut counts).unwrap();
        let rows = [r as f32, -(r as f32) - 0.25];
        (counts, gather(&g, &rows).unwrap())
    });
    for (counts, rows) in out {
        assert_eq!(counts, [3, 30, 21]);
        assert_eq!(rows, [0.0, -0.25, 1.0, -1.25, 2.0, -2.25]);
    }
}
