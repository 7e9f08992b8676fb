//! End to end in headless Chromium: load the play page from a real server, press keys and click
//! buttons, and check the canvas pixels against a naive reference of the fake model. Saves a
//! screenshot as `<target>/jinn-serve-browser.png`.
//!
//! Skips (saying why) when no Chromium is installed, unless `JINN_REQUIRE_BROWSER=1`.

mod chromium;
mod common;

use chromium::{chromium_or_skip, launch, Cdp};
use common::{reference_step, start_fake};
use jinn_data::FrameShape;
use jinn_serve::fake::FakeWorld;
use jinn_serve::Limits;
use serde_json::{json, Value};
use std::path::PathBuf;

const SHAPE: FrameShape = FrameShape { height: 24, width: 32, channels: 3 };

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

#[test]
fn keys_and_buttons_drive_the_page_in_headless_chromium() {
    let Some(binary) = chromium_or_skip() else { return };
    let (server, _) = start_fake(SHAPE, Limits::default());
    let profile = tempfile::tempdir().unwrap();
    let (_browser, ws_url) = launch(&binary, profile.path());
    let mut cdp = Cdp::connect(&ws_url);
    let target = cdp.call("Target.createTarget", json!({ "url": format!("{}/", server.base) }));
    let attached =
        cdp.call("Target.attachToTarget", json!({ "targetId": target["targetId"], "flatten": true }));
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    cdp.wait_for("window.jinn !== undefined && jinn.ready === true");

    let title = cdp.eval("document.title");
    assert_eq!(title, "jinn play · fake");
    let labels = cdp.eval("Array.from(document.querySelectorAll('button.action')).map(b => b.textContent)");
    assert_eq!(labels, json!(["left←", "right→", "up↑", "down↓", "firespace"]));

    let start = cdp.canvas(SHAPE);
    assert_eq!(start, FakeWorld::pattern(SHAPE, 0), "the page shows the first sampled frame exactly");

    cdp.press("ArrowRight", "ArrowRight", 39);
    cdp.wait_for("jinn.steps === 1 && !jinn.busy");
    let right = cdp.canvas(SHAPE);
    assert_ne!(right, start, "a key press changes the frame");
    assert_eq!(right, reference_step(&start, 1));

    cdp.press("z", "KeyZ", 90);
    cdp.wait_for("jinn.index === 0 && !jinn.busy");
    assert_eq!(cdp.canvas(SHAPE), start, "undo shows the start frame again");

    cdp.press("ArrowLeft", "ArrowLeft", 37);
    cdp.wait_for("jinn.steps === 2 && !jinn.busy");
    let left = cdp.canvas(SHAPE);
    assert_ne!(left, right, "two actions from the same frame give different frames");
    assert_eq!(left, reference_step(&start, 0));

    cdp.click(r#"button.action[data-action="3"]"#);
    cdp.wait_for("jinn.steps === 3 && !jinn.busy");
    let down = cdp.canvas(SHAPE);
    assert_eq!(down, reference_step(&left, 3), "the on-screen button steps with its action");

    cdp.press(" ", "Space", 32);
    cdp.wait_for("jinn.steps === 4 && !jinn.busy");
    assert_eq!(cdp.canvas(SHAPE), reference_step(&down, 4));

    let stats = cdp.eval(
        "[document.getElementById('stat-index').textContent, document.getElementById('stat-fps').textContent, \
         document.getElementById('stat-latency').textContent, jinn.lastError]",
    );
    assert_eq!(stats[0], "3", "frame counter: start, left, down, fire");
    assert!(stats[1].as_str().unwrap().parse::<f64>().unwrap() > 0.0, "frames/s shown: {stats}");
    assert!(stats[2].as_str().unwrap().parse::<f64>().unwrap() > 0.0, "latency shown: {stats}");
    assert_eq!(stats[3], Value::Null, "no error shown");
    let href = cdp.eval("document.getElementById('download').getAttribute('href')");
    assert!(href.as_str().unwrap().ends_with("/gif"), "{href}");

    let shot = cdp.call("Page.captureScreenshot", json!({ "format": "png" }));
    let png = jinn_serve::png::from_base64(shot["data"].as_str().unwrap()).unwrap();
    let path = target_dir().join("jinn-serve-browser.png");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &png).unwrap();
    eprintln!("screenshot: {}", path.display());
    assert!(png.len() > 1000);
}
