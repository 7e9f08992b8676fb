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
