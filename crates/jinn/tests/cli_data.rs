//! The `jinn data` commands end to end, as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn gen(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "data",
        "gen",
        "--env",
        "breakout",
        "--episodes",
        "6",
        "--size",
        "32x32",
        "--min-episode-len",
        "20",
        "--max-episode-len",
        "60",
        "--chunk-len",
        "25",
        "--chunks-per-file",
        "4",
        "--val-fraction",
        "0.2",
        "--test-fraction",
        "0.2",
        "--out",
    ];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(extra);
    jinn(&args)
}

#[test]
fn gen_verify_inspect_and_corruption_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let o = gen(&out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("train:"), "{}", text(&o));

    let o = jinn(&["data", "verify", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ok: all"), "{}", text(&o));

    let gif = dir.path().join("p.gif");
    let o = jinn(&["data", "inspect", out.to_str().unwrap(), "--gif", gif.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("env: breakout") && t.contains("histogram") && t.contains("32x32x3"), "{t}");
    assert!(t.contains("ball events (read off the frames)") && t.contains("brick hit"), "{t}");
    assert!(std::fs::metadata(&gif).unwrap().len() > 100);

    // A second gen into the same directory is refused unless --overwrite.
    let o = gen(&out, &[]);
    assert!(!o.status.success() && text(&o).contains("--overwrite"), "{}", text(&o));
    assert!(gen(&out, &["--overwrite"]).status.success());

    // Flip bytes inside the first record's chunk: verify names the file and record.
    let file = out.join("train/data_0000.array_record");
    let mut bytes = std::fs::read(&file).unwrap();
    for b in &mut bytes[200..210] {
        *b ^= 0x5a;
    }
    std::fs::write(&file, &bytes).unwrap();
    let o = jinn(&["data", "verify", out.to_str().unwrap()]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("BAD") && t.contains("data_0000.array_record") && t.contains("record 0"), "{t}");
}

#[test]
fn bad_flags_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let o = gen(&dir.path().join("x"), &["--size", "0x4"]);
    assert!(!o.status.success() && text(&o).contains("--size"), "{}", text(&o));
    let o = gen(&dir.path().join("f"), &["--follow-prob", "1.5"]);
    assert!(!o.status.success() && text(&o).contains("--follow-prob"), "{}", text(&o));
    let o = jinn(&["data", "gen", "--env", "pong", "--out", dir.path().join("y").to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).contains("breakout"), "{}", text(&o));
    let o = jinn(&["data", "verify", dir.path().join("missing").to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).contains("missing"), "{}", text(&o));
}

#[test]
fn import_pngs_writes_a_readable_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let episode = dir.path().join("pngs/ep0");
    std::fs::create_dir_all(&episode).unwrap();
    for i in 0..30u32 {
        let img = image::RgbImage::from_fn(20, 16, |x, y| {
            image::Rgb([(x * 10) as u8, (y * 10) as u8, (i * 8) as u8])
        });
        img.save(episode.join(format!("{i}.png"))).unwrap();
    }
    let out = dir.path().join("ds");
    let o = jinn(&[
        "data",
        "import-pngs",
        dir.path().join("pngs").to_str().unwrap(),
        "--size",
        "16x16",
        "--chunk-len",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = jinn(&["data", "verify", out.to_str().unwrap()]);
    assert!(o.status.success() && text(&o).contains("3 records"), "{}", text(&o));
}

/// Copy of the CoinRun sample Jasmine's generator wrote (crates/jinn-data/tests/fixtures), with
/// the empty `val/` it also left.
fn jasmine_coinrun(dir: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../jinn-data/tests/fixtures/jasmine_coinrun");
    let out = dir.join("coinrun");
    std::fs::create_dir_all(out.join("train")).unwrap();
    std::fs::create_dir_all(out.join("val")).unwrap();
    std::fs::copy(src.join("metadata.json"), out.join("metadata.json")).unwrap();
    let file = "train/data_0000.array_record";
    std::fs::copy(src.join(file), out.join(file)).unwrap();
    out
}

#[test]
fn jasmine_coinrun_dataset_verifies_and_inspects() {
    let dir = tempfile::tempdir().unwrap();
    let data = jasmine_coinrun(dir.path());
    let path = data.to_str().unwrap();

    // No frame shape in Jasmine's metadata.json: the flag is named.
    let o = jinn(&["data", "verify", path]);
    assert!(!o.status.success() && text(&o).contains("--frame-shape"), "{}", text(&o));
    // A shape that does not divide the records is named with the record.
    let o = jinn(&["data", "verify", path, "--frame-shape", "60x64x3"]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("data_0000.array_record") && t.contains("60×64×3"), "{t}");

    let o = jinn(&["data", "verify", path, "--frame-shape", "64x64x3"]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("train: 4 records checked") && !t.contains("val:"), "{t}");

    // Too large a shape for the records is an error, not a panic.
    let o = jinn(&["data", "inspect", path, "--frame-shape", "128x128x3"]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("record 0") && t.contains("128×128×3"), "{t}");

    let gif = dir.path().join("p.gif");
    let o = jinn(&["data", "inspect", path, "--frame-shape", "64x64x3", "--gif", gif.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("env: coinrun  num_actions: 15") && t.contains("actions: int32"), "{t}");
    assert!(t.contains("NOOP") && t.contains("LEFT+DOWN") && t.contains("frame 64x64x3"), "{t}");
}
