//! Model tests: equal parameter counts, cached = uncached decoding, memory-free gradients =
//! autodiff, and a tiny model memorising a text.

use super::*;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};

fn tiny(arch: Arch) -> LmModelConfig {
    LmModelConfig {
        arch,
        d_model: 16,
        depth: 3,
        num_heads: 2,
        d_ffn: 32,
        max_seq: 24,
        backprop: Backprop::Reconstruct,
    }
}

fn tokens(ids: &[u32], rows: usize, device: &Device) -> Tensor<2, Int> {
    let data = ids.iter().map(|&t| t as i64).collect::<Vec<_>>();
    Tensor::from_data(TensorData::new(data, [rows, ids.len() / rows]), device)
}

fn pseudo_text(n: usize, vocab: u32) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 7 + i * i * 3 + 1) % vocab).collect()
}

#[test]
fn rsf_and_standard_have_equal_parameter_counts() {
    let device = Device::flex();
    for depth in [1, 4] {
        let cfg = |arch| LmModelConfig { depth, ..tiny(arch) };
        let rsf = cfg(Arch::Rsf).init(50, 0, &device).unwrap();
        let std = cfg(Arch::Standard).init(50, 0, &device).unwrap();
        assert_eq!(rsf.num_params(), std.num_params(), "depth {depth}");
        assert_eq!((rsf.rsf.len(), std.standard.len()), (depth, depth));
        assert_eq!((rsf.arch(), std.arch()), (Arch::Rsf, Arch::Standard));
        // Per block: attention 4(w² + w) + LN 2w, FFN 2·w·d_ffn + d_ffn + w + LN 2w.
        let (w, f, v) = (16, 32, 50);
        let block = 4 * (w * w + w) + 2 * w + 2 * w * f + f + w + 2 * w;
        assert_eq!(std.num_params(), v * w + depth * block + 2 * w + w * v + v);
    }
}

#[test]
fn cached_decoding_equals_the_full_forward() {
    let device = Device::flex();
    for arch in [Arch::Rsf, Arch::Standard] {
        let model = tiny(arch).init(40, 3, &device).unwrap();
        let ids = pseudo_text(2 * 11, 40);
        let full = model.forward(tokens(&ids, 2, &device)); // [2, 11, 40]
        let x = tokens(&ids, 2, &device);
        let mut cache = model.new_cache();
        let mut parts = Vec::new();
        for (start, len) in [(0, 5), (5, 1), (6, 1), (7, 4)] {
            parts.push(model.forward_cached(x.clone().narrow(1, start, len), &mut cache).unwrap());
        }
        assert_eq!(cache.len(), 11);
        let diff: f32 = (Tensor::cat(parts, 1) - full).abs().max().into_scalar();
        assert!(diff < 1e-4, "{arch:?}: cached logits differ by {diff}");
        let err = model.forward_cached(x.narrow(1, 0, 1).repeat_dim(1, 14), &mut cache).unwrap_err();
        assert!(err.to_string().contains("max_seq"), "{err}");
    }
}

/// Every parameter gradient in `grads` as host floats, in module order.
fn flat_grads(model: &LanguageModel, grads: &GradientsParams) -> Vec<Vec<f32>> {
    struct Collect<'a> {
        grads: &'a GradientsParams,
        out: Vec<Vec<f32>>,
    }
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let g = self.grads.get::<D>(param.id).map(|g| g.try_into_vec_as::<f32>().unwrap());
            self.out.push(g.unwrap_or_default());
        }
    }
    let mut c = Collect { grads, out: Vec::new() };
    model.visit(&mut c);
    c.out
}

#[test]
fn memory_free_gradients_equal_autodiff() {
    let device = Device::flex().autodiff();
    let model = LmModelConfig { depth: 4, ..tiny(Arch::Rsf) }.init(30, 5, &device).unwrap();
    let ids = pseudo_text(2 * 13, 30);
    let (x, y) = (tokens(&ids[..24], 2, &device), tokens(&ids[2..], 2, &device));
    let mut engine = Backprop::Reconstruct.engine(Arch::Rsf).expect("RSF + reconstruct has an engine");
    let (loss_r, grads_r) = model.forward_backward(x.clone(), y.clone(), 2.0, Some(&mut engine)).unwrap();
    let (loss_s, grads_s) = model.forward_backward(x, y, 2.0, None).unwrap();
    assert!((loss_r - loss_s).abs() < 1e-6, "{loss_r} vs {loss_s}");
    let (gr, gs) = (flat_grads(&model, &grads_r), flat_grads(&model, &grads_s));
    assert_eq!(gr.len(), gs.len());
    for (i, (a, b)) in gr.iter().zip(&gs).enumerate() {
        assert_eq!(a.len(), b.len(), "parameter {i}: gradient missing on one side");
        assert!(!a.is_empty(), "parameter {i} got no gradient");
        let diff = a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
        let scale = b.iter().map(|q| q.abs()).fold(0.0f32, f32::max);
        assert!(diff <= 1e-4 * scale.max(1e-3), "parameter {i}: max diff {diff}, scale {scale}");
    }
    assert_eq!(engine.stats().fallbacks, 0);
}

#[test]
fn a_tiny_rsf_lm_memorises_a_short_text() {
    let device = Device::flex().autodiff();
    let text = b"to be, or not to be, that is the question";
    let ids: Vec<u32> = text.iter().map(|&b| b as u32).collect();
    let cfg = LmModelConfig { d_model: 32, depth: 2, d_ffn: 64, max_seq: 64, ..tiny(Arch::Rsf) };
    let mut model = cfg.init(256, 1, &device).unwrap();
    let (x, y) = (tokens(&ids[..ids.len() - 1], 1, &device), tokens(&ids[1..], 1, &device));
    let mut optim = jinn_train::optim::OptimConfig::default().init().unwrap();
    let mut engine = cfg.backprop.engine(cfg.arch);
    let mut loss = f64::INFINITY;
    for _ in 0..150 {
        let (l, grads) = model.forward_backward(x.clone(), y.clone(), 1.0, engine.as_mut()).unwrap();
        loss = l;
        model = optim.step(3e-3, model, grads);
    }
    assert!(loss < 0.05, "final loss {loss} nats/token");
    // Greedy decoding from the first 3 characters reproduces the rest of the text.
    let valid = model.valid();
    let sampling = Sampling { temperature: 0.0, top_k: 0 };
    let n = ids.len() - 3;
    let out = generate(&valid, &ids[..3], n, sampling, &mut rand::rng(), |_| true).unwrap();
    assert_eq!(out, ids[3..]);
}

#[test]
fn bad_prompts_and_settings_are_errors() {
    let device = Device::flex();
    let model = tiny(Arch::Rsf).init(10, 0, &device).unwrap();
    let s = Sampling { temperature: 0.8, top_k: 5 };
    let mut rng = rand::rng();
    let msg = |r: Result<Vec<u32>, LmError>| r.unwrap_err().to_string();
    assert!(msg(generate(&model, &[], 3, s, &mut rng, |_| true)).contains("empty"));
    assert!(msg(generate(&model, &[1; 25], 0, s, &mut rng, |_| true)).contains("prompt is 25 tokens"));
    assert!(msg(generate(&model, &[1; 20], 5, s, &mut rng, |_| true)).contains("max-tokens"));
    let bad = Sampling { temperature: -1.0, top_k: 0 };
    assert!(msg(generate(&model, &[1], 1, bad, &mut rng, |_| true)).contains("temperature"));
    let mut got = 0;
    generate(&model, &[1, 2], 5, s, &mut rng, |_| {
        got += 1;
        got < 2
    })
    .unwrap();
    assert_eq!(got, 2, "returning false from the callback stops generation");
}

#[test]
fn top_k_sampling_only_draws_the_k_best() {
    let logits = [0.0f32, 3.0, 1.0, 2.9, -5.0];
    let s = Sampling { temperature: 1.0, top_k: 2 };
    let mut rng = jinn_data::rng::rng_for(0, "test", 0);
    let mut seen = [0usize; 5];
    for _ in 0..400 {
        seen[s.sample(&logits, &mut rng)] += 1;
    }
    assert_eq!(seen[0] + seen[2] + seen[4], 0, "{seen:?}");
    assert!(seen[1] > 100 && seen[3] > 100, "{seen:?}");
    assert_eq!(Sampling { temperature: 0.0, top_k: 0 }.sample(&logits, &mut rng), 1);
}

#[test]
fn reconstruction_error_is_tiny_for_rsf_and_none_for_standard() {
    let device = Device::flex();
    let ids = tokens(&pseudo_text(24, 50), 2, &device);
    let rsf = tiny(Arch::Rsf).init(50, 0, &device).unwrap();
    let err = rsf.reconstruction_error(ids.clone()).unwrap();
    assert!((0.0..1e-5).contains(&err), "f32 round trip through the stack: {err}");
    assert!(tiny(Arch::Standard).init(50, 0, &device).unwrap().reconstruction_error(ids).is_none());
}
