//! A world trained here steers where a person plays it. Breakout at 64×64: a tiny VQ tokenizer
//! and a MaskGIT dynamics trained on the recorded actions (`--actions gt`), about two minutes of
//! training: long enough that steering does not hang on rounding (see docs/evaluating-worlds.md).
//! Then
//! * over a real socket: `jinn eval play` serves the model on loopback, holds the keys the play
//!   page binds to left and right for 8 steps each from several dataset frames, and reads the
//!   paddle off the returned frames;
//! * in headless Chromium: the play page served by `jinn play` starts from a dataset frame, the
//!   arrow keys are pressed 8 times each, and the paddle is read off the page's canvas.
//!
//! The browser part skips (saying why) when no Chromium is installed, unless
//! `JINN_REQUIRE_BROWSER=1`.

#[path = "../../jinn-serve/tests/chromium/mod.rs"]
mod chromium;
mod common;

use chromium::{chromium_or_skip, launch, Cdp};
use common::PlayServer;
use jinn_data::objects::detect_breakout;
use jinn_data::FrameShape;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

const SIZE: usize = 64;
const SHAPE: FrameShape = FrameShape { height: SIZE, width: SIZE, channels: 3 };
/// Steps each key is held.
const HOLD: usize = 8;
/// The paddle must move this far (px) over the hold: 8 px of a 64-px frame, as `jinn eval play`.
const REQUIRED_PX: f64 = 8.0 * SIZE as f64 / 64.0;

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn ok(args: &[&str]) -> String {
    let o = jinn(args);
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "jinn {}:\n{text}", args.join(" "));
    text
}

/// Generate the data, train the tokenizer and the recorded-action dynamics; returns the
/// dynamics run directory.
fn train_world(dir: &Path) -> std::path::PathBuf {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/demo");
    let (data, tok, dyn_run) = (dir.join("data"), dir.join("tok"), dir.join("dyn"));
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let size = format!("{SIZE}x{SIZE}");
    #[rustfmt::skip]
    ok(&["data", "gen", "--episodes", "48", "--size", &size, "--out", &p(&data),
         "--val-fraction", "0.1", "--test-fraction", "0.05",
         "--min-episode-len", "100", "--max-episode-len", "200"]);
    let schedule = |steps: usize| {
        [
            format!("train.steps={steps}"),
            "train.lr.warmup_steps=20".into(),
            format!("train.lr.decay_steps={}", steps / 4),
            format!("train.val_every={steps}"),
            format!("train.ckpt_every={steps}"),
            "train.image_every=0".into(),
            "train.batch_size=4".into(),
        ]
    };
    let with_sets = |mut args: Vec<String>, sets: &[String]| {
        for s in sets {
            args.extend(["--set".into(), s.clone()]);
        }
        args
    };
    #[rustfmt::skip]
    let tokenizer = [
        format!("model.height={SIZE}"), format!("model.width={SIZE}"), "model.patch=8".into(),
        "model.model_dim=32".into(), "model.ffn_dim=64".into(), "model.num_heads=2".into(),
        "model.encoder_blocks=1".into(), "model.decoder_blocks=1".into(), "model.num_codes=64".into(),
        "data.seq_len=4".into(),
    ];
    let args = vec![
        "train".into(),
        "tokenizer".into(),
        "--config".into(),
        p(&configs.join("tokenizer.toml")),
        "--data".into(),
        p(&data),
        "--out".into(),
        p(&tok),
    ];
    let args = with_sets(with_sets(args, &tokenizer), &schedule(400));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    #[rustfmt::skip]
    let dynamics = [
        "model.model_dim=64".into(), "model.ffn_dim=128".into(), "model.num_heads=4".into(),
        "data.seq_len=6".into(),
    ];
    #[rustfmt::skip]
    let args = vec![
        "train".into(), "dynamics".into(), "--config".into(), p(&configs.join("dynamics.toml")),
        "--data".into(), p(&data), "--tokenizer".into(), p(&tok), "--actions".into(), "gt".into(),
        "--out".into(), p(&dyn_run),
    ];
    let args = with_sets(with_sets(args, &dynamics), &schedule(2400));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    dyn_run
}

/// `jinn eval play` over loopback: the steering trials of its metrics.json, after checking
/// that holding each key moved the paddle the right way.
fn steers_over_a_socket(dyn_run: &Path, data: &Path, out: &Path) -> Vec<Value> {
    #[rustfmt::skip]
    let report = ok(&["eval", "play", "--ckpt", dyn_run.to_str().unwrap(), "--data", data.to_str().unwrap(),
                      "--starts", "10", "--hold", &HOLD.to_string(), "--play-steps", "4",
                      "--out", out.to_str().unwrap()]);
    eprintln!("{report}");
    assert!(report.contains("ArrowLeft = action 1 \"left\""), "{report}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    let m = &m["metrics"];
    assert_eq!(m["required_px"].as_f64(), Some(REQUIRED_PX), "{m}");
    let pass = m["steering_pass"].as_f64().unwrap();
    assert!(pass >= 0.75, "holding left / right moved the paddle that way in only {pass} of the trials: {m}");
    m["steering"].as_array().unwrap().clone()
}

/// The paddle centre x (px) on the page's canvas.
fn canvas_paddle(cdp: &mut Cdp) -> f64 {
    let frame = cdp.canvas(SHAPE);
    detect_breakout(&frame.pixels, SHAPE).unwrap().paddle_x.expect("a paddle on the canvas")
}

/// On the page: start from `(episode, frame)` of the val split, press `key` `HOLD` times;
/// returns the paddle's x before and after.
fn hold_key_on_page(cdp: &mut Cdp, episode: u64, frame: u64, key: &str, key_code: u32) -> (f64, f64) {
    cdp.eval(&format!(
        "(() => {{ jinn.previous = jinn.id; \
         document.getElementById('split').value = 'val'; \
         document.getElementById('episode').value = '{episode}'; \
         document.getElementById('start-frame').value = '{frame}'; \
         document.getElementById('reset-dataset').click(); return true; }})()"
    ));
    cdp.wait_for("jinn.id !== null && jinn.id !== jinn.previous && !jinn.busy");
    let before = canvas_paddle(cdp);
    let steps = cdp.eval("jinn.steps").as_u64().unwrap();
    for k in 1..=HOLD as u64 {
        cdp.press(key, key, key_code);
        cdp.wait_for(&format!("jinn.steps === {} && !jinn.busy", steps + k));
    }
    assert_eq!(cdp.eval("jinn.lastError"), Value::Null);
    (before, canvas_paddle(cdp))
}

/// Press the arrow keys on the play page in headless Chromium, from the start frame of the
/// steering trial (one that steered both ways over the socket) nearest the middle.
fn steers_in_the_browser(dyn_run: &Path, data: &Path, trials: &[Value]) {
    let Some(binary) = chromium_or_skip() else { return };
    let centre = SIZE as f64 / 2.0;
    let trial = trials
        .iter()
        .filter(|t| {
            let dx = |k: &str| t[k].as_f64().unwrap_or(0.0);
            t["room"] == json!([true, true]) && dx("left_dx") <= -REQUIRED_PX && dx("right_dx") >= REQUIRED_PX
        })
        .min_by(|a, b| {
            let off = |t: &Value| (t["paddle_x"].as_f64().unwrap() - centre).abs();
            off(a).total_cmp(&off(b))
        })
        .expect("a start frame that steered both ways over the socket");
    let server = PlayServer::start(dyn_run, data, &["--device", "cpu"]);
    let profile = tempfile::tempdir().unwrap();
    let (_browser, ws_url) = launch(&binary, profile.path());
    let mut cdp = Cdp::connect(&ws_url);
    let target = cdp.call("Target.createTarget", json!({ "url": format!("{}/", server.base) }));
    let attached =
        cdp.call("Target.attachToTarget", json!({ "targetId": target["targetId"], "flatten": true }));
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    cdp.wait_for("window.jinn !== undefined && jinn.ready === true");

    let labels = cdp.eval("Array.from(document.querySelectorAll('button.action')).map(b => b.textContent)");
    let labels: Vec<&str> = labels.as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(labels.contains(&"left←") && labels.contains(&"right→"), "the arrow keys' buttons: {labels:?}");

    // The trial names the last start frame; the page asks for the first.
    let context = cdp.eval("jinn.info.max_start_frames").as_u64().unwrap();
    let episode = trial["episode"].as_u64().unwrap();
    let first = trial["frame"].as_u64().unwrap() + 1 - context;
    let (x0, left) = hold_key_on_page(&mut cdp, episode, first, "ArrowLeft", 37);
    let (x1, right) = hold_key_on_page(&mut cdp, episode, first, "ArrowRight", 39);
    assert_eq!(x0, x1, "both holds start from the same frame");
    eprintln!("browser: paddle at {x0:.1} px; after {HOLD}× ArrowLeft {left:.1}, after {HOLD}× ArrowRight {right:.1}");
    assert!(left <= x0 - REQUIRED_PX, "ArrowLeft moved the paddle from {x0} to {left} px");
    assert!(right >= x0 + REQUIRED_PX, "ArrowRight moved the paddle from {x0} to {right} px");
}

#[test]
fn a_trained_world_steers_over_a_socket_and_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let dyn_run = train_world(dir.path());
    let data = dir.path().join("data");
    let trials = steers_over_a_socket(&dyn_run, &data, &dir.path().join("eval-play"));
    steers_in_the_browser(&dyn_run, &data, &trials);
}
