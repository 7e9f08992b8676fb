//! `jinn train tokenizer` end to end on a tiny generated dataset.

use std::path::Path;
use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A tiny model on 16×16 frames: 3 steps take well under a second.
const CONFIG: &str = r#"
[model]
height = 16
width = 16
patch = 4
model_dim = 16
ffn_dim = 32
num_heads = 2
encoder_blocks = 1
decoder_blocks = 1
latent_dim = 8
num_codes = 32

[data]
seq_len = 4

[train]
steps = 3
batch_size = 2
log_every = 1
val_every = 3
val_batches = 1
image_every = 3
ckpt_every = 3

[train.lr]
warmup_steps = 1
decay_steps = 1
max_lr = 1e-3
"#;

#[test]
fn trains_three_steps_resumes_and_rejects_a_shape_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("ds");
    let o = jinn(&[
        "data",
        "gen",
        "--env",
        "breakout",
        "--episodes",
        "4",
        "--size",
        "16x16",
        "--min-episode-len",
        "12",
        "--max-episode-len",
        "12",
        "--chunk-len",
        "12",
        "--val-fraction",
        "0.25",
        "--test-fraction",
        "0",
        "--out",
        p(&data),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let config = dir.path().join("tok.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = dir.path().join("run");
    let train_into = |out: &Path, extra: &[&str]| {
        let mut args =
            vec!["train", "tokenizer", "--config", p(&config), "--data", p(&data), "--out", p(out)];
        args.extend_from_slice(extra);
        jinn(&args)
    };
    let train = |extra: &[&str]| train_into(&out, extra);

    let o = train(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("steps 0..3") && t.contains("val @ step 3") && t.contains("psnr"), "{t}");
    assert!(out.join("step_000003").is_dir(), "{t}");
    assert!(out.join("images/recon_step_000003.gif").is_file());

    // Same --out without --resume is refused; with --resume and more steps it continues.
    let o = train(&[]);
    assert!(!o.status.success() && text(&o).contains("--resume"), "{}", text(&o));
    let o = train(&["--resume", "--set", "train.steps=4"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("steps 3..4"), "{}", text(&o));

    // A config for 32×32 frames against 16×16 data names the fields and both shapes.
    let o = train_into(&dir.path().join("other"), &["--set", "model.height=32", "--set", "model.width=32"]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("model.height") && t.contains("32×32×3") && t.contains("16×16×3"), "{t}");
}

/// Generate the tiny 16×16 dataset into `dir/ds` and train CONFIG for its 3 steps into
/// `dir/run`; returns (data, run).
fn tiny_trained_run(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let data = dir.join("ds");
    let o = jinn(&[
        "data",
        "gen",
        "--env",
        "breakout",
        "--episodes",
        "4",
        "--size",
        "16x16",
        "--min-episode-len",
        "12",
        "--max-episode-len",
        "12",
        "--chunk-len",
        "12",
        "--val-fraction",
        "0.25",
        "--test-fraction",
        "0",
        "--out",
        p(&data),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let config = dir.join("tok.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let run = dir.join("run");
    let o = jinn(&[
        "train",
        "tokenizer",
        "--config",
        p(&config),
        "--data",
        p(&data),
        "--out",
        p(&run),
        "--device",
        "cpu",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // stderr is not a terminal here: plain progress lines instead of a bar.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("step 3/3") && stderr.contains("ms/step") && stderr.contains("ETA"), "{stderr}");
    (data, run)
}

#[test]
fn eval_and_plot_a_trained_run_and_explain_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (data, run) = tiny_trained_run(dir.path());

    // eval: metrics printed and written, GIF with ground truth | reconstruction.
    let gif = dir.path().join("recon.gif");
    let json = dir.path().join("eval.json");
    let o = jinn(&[
        "eval",
        "tokenizer",
        "--ckpt",
        p(&run),
        "--data",
        p(&data),
        "--batches",
        "2",
        "--gif",
        p(&gif),
        "--gif-clips",
        "2",
        "--json",
        p(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("step 3") && t.contains("psnr") && t.contains("ssim") && t.contains("codebook usage"),
        "{t}"
    );
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let psnr = m["metrics"]["psnr"].as_f64().unwrap();
    let usage = m["metrics"]["codebook_usage"].as_f64().unwrap();
    assert!(psnr.is_finite() && psnr > 0.0 && (0.0..=1.0).contains(&usage) && usage > 0.0, "{m}");
    assert_eq!(m["step"], 3);
    // Breakout data: the reconstructions' objects, frames 1.. of each clip (2 batches of the
    // run's 2 clips × 4 frames), in the table and the JSON.
    assert!(t.contains("objects (breakout") && t.contains("reconstruction"), "{t}");
    let objects = &m["objects"];
    assert_eq!(objects["overall"]["frames"], 2 * 2 * 3, "{objects}");
    assert_eq!(objects["per_frame"].as_array().unwrap().len(), 3, "{objects}");
    let share = objects["overall"]["off_palette_share"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&share), "{objects}");
    // The GIF is two 16×16 panels side by side: wider than tall, frames of both clips.
    let decoder = gif::DecodeOptions::new().read_info(std::fs::File::open(&gif).unwrap()).unwrap();
    assert!(
        decoder.width() >= 2 * 16 && decoder.width() > decoder.height(),
        "{}x{}",
        decoder.width(),
        decoder.height()
    );
    let frames = decoder.into_iter().count();
    assert_eq!(frames, 2 * 4, "2 clips × seq_len 4 frames");

    // The same step evaluated through its step directory gives the same numbers.
    let o = jinn(&[
        "eval",
        "tokenizer",
        "--ckpt",
        p(&run.join("step_000003")),
        "--data",
        p(&data),
        "--batches",
        "2",
    ]);
    assert!(o.status.success() && text(&o).contains(&format!("psnr {psnr:.2} dB")), "{}", text(&o));

    // Bad input: missing checkpoint, a directory without checkpoints, data of another shape.
    let o = jinn(&["eval", "tokenizer", "--ckpt", p(&dir.path().join("nope")), "--data", p(&data)]);
    assert!(!o.status.success() && text(&o).contains("no such directory"), "{}", text(&o));
    let o = jinn(&["eval", "tokenizer", "--ckpt", p(&data), "--data", p(&data)]);
    assert!(!o.status.success() && text(&o).contains("no good checkpoint"), "{}", text(&o));
    let big = dir.path().join("big");
    let o = jinn(&[
        "data",
        "gen",
        "--env",
        "breakout",
        "--episodes",
        "2",
        "--size",
        "24x24",
        "--min-episode-len",
        "8",
        "--max-episode-len",
        "8",
        "--chunk-len",
        "8",
        "--val-fraction",
        "0.5",
        "--test-fraction",
        "0",
        "--out",
        p(&big),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = jinn(&["eval", "tokenizer", "--ckpt", p(&run), "--data", p(&big)]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("16×16×3") && t.contains("24×24×3"), "{t}");
    let o = jinn(&["eval", "tokenizer", "--ckpt", p(&run), "--data", p(&data), "--split", "test"]);
    assert!(!o.status.success() && text(&o).contains("test"), "{}", text(&o));

    // plot: every train and val metric by default; --metrics picks names.
    let png = dir.path().join("curves.png");
    let o = jinn(&["plot", p(&run), "--out", p(&png), "--metrics", "loss,psnr"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("train/loss") && text(&o).contains("val/psnr"), "{}", text(&o));
    let img = image::open(&png).unwrap();
    // 4 panels (train/val × loss/psnr) of 640×240 each, stacked.
    assert_eq!((img.width(), img.height()), (640, 4 * 240));
    let o = jinn(&["plot", p(&run)]);
    assert!(o.status.success() && run.join("plot.png").is_file(), "{}", text(&o));
    let o = jinn(&["plot", p(&run), "--metrics", "nonsense"]);
    assert!(!o.status.success() && text(&o).contains("no metric named `nonsense`"), "{}", text(&o));
    let o = jinn(&["plot", p(&data)]);
    assert!(!o.status.success() && text(&o).contains("metrics.jsonl"), "{}", text(&o));
    std::fs::write(run.join("metrics.jsonl"), "").unwrap();
    let o = jinn(&["plot", p(&run)]);
    assert!(!o.status.success() && text(&o).contains("no metric records"), "{}", text(&o));
}

// CUDA, which CI never builds, so that this runs in every CI build.
#[cfg(not(feature = "cuda"))]
#[test]
fn a_gpu_device_without_its_feature_says_how_to_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let o =
        jinn(&["train", "tokenizer", "--data", p(dir.path()), "--out", p(dir.path()), "--device", "cuda:0"]);
    assert!(!o.status.success() && text(&o).contains("--features cuda"), "{}", text(&o));
}

/// The `loss` of every logged training step in `run`'s metrics.jsonl.
fn train_losses(run: &Path) -> Vec<(u64, f64)> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["split"] == "train")
        .map(|r| (r["step"].as_u64().unwrap(), r["metrics"]["loss"].as_f64().unwrap()))
        .collect()
}

#[test]
fn two_thread_ranks_train_the_model_of_one_rank_and_their_checkpoint_resumes_on_one() {
    let dir = tempfile::tempdir().unwrap();
    let (data, one) = tiny_trained_run(dir.path());
    let config = dir.path().join("tok.toml");
    let train = |out: &Path, extra: &[&str]| {
        let mut args =
            vec!["train", "tokenizer", "--config", p(&config), "--data", p(&data), "--out", p(out)];
        args.extend_from_slice(extra);
        jinn(&args)
    };
    let two = dir.path().join("two-ranks");
    let o = train(&two, &["--set", "train.local_ranks=2"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("1 per rank × 2 ranks = 2"), "{t}");
    // Rank 0 alone reports: one summary line.
    assert_eq!(t.matches("steps 0..3 in").count(), 1, "{t}");
    let (a, b) = (train_losses(&one), train_losses(&two));
    assert_eq!(a.len(), 3, "{a:?}");
    assert_eq!(a.iter().map(|s| s.0).collect::<Vec<_>>(), b.iter().map(|s| s.0).collect::<Vec<_>>());
    for ((step, x), (_, y)) in a.iter().zip(&b) {
        // The same batch, draws and update: equal up to the order of float sums.
        assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "step {step}: loss {x} on one rank, {y} on two");
    }
    // The two-rank checkpoint continues on one rank, as one rank's own checkpoint does.
    let o = train(&two, &["--resume", "--set", "train.steps=4"]);
    assert!(o.status.success() && text(&o).contains("steps 3..4"), "{}", text(&o));
    let o = train(&one, &["--resume", "--set", "train.steps=4"]);
    assert!(o.status.success(), "{}", text(&o));
    let (a, b) = (train_losses(&one), train_losses(&two));
    let (x, y) = (a[3].1, b[3].1);
    assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "step 4: {x} against {y}");

    // Ranks that cannot split the batch are refused with the field's name.
    let o = train(&dir.path().join("three"), &["--set", "train.local_ranks=3"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("train.local_ranks") && text(&o).contains("batch_size (2)"), "{}", text(&o));
}
