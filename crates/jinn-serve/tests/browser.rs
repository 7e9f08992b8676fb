//! End to end in headless Chromium: load the play page from a real server, press keys and click
//! buttons, and check the canvas pixels against a naive reference of the fake model. Saves a
//! screenshot as `<target>/jinn-serve-browser.png`.
//!
//! Skips (saying why) when no Chromium is installed, unless `JINN_REQUIRE_BROWSER=1`.
//!
//! The browser is driven over the Chrome DevTools protocol with a few JSON commands on a
//! WebSocket (`tungstenite`). The CDP client crates (`headless_chrome`, `chromiumoxide`)
//! generate bindings for the whole protocol and take minutes to compile on CI's 2 cores; this
//! test needs six commands, so it speaks them directly.

mod common;

use common::{reference_step, start_fake};
use jinn_data::FrameShape;
use jinn_serve::fake::FakeWorld;
use jinn_serve::{Frame, Limits};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

const SHAPE: FrameShape = FrameShape { height: 24, width: 32, channels: 3 };

/// The Chromium binary: `$JINN_CHROMIUM`, else the first of the usual names on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("JINN_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// The browser process, killed when dropped.
struct Browser(Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start headless Chromium with remote debugging on a free port; returns it and its browser
/// WebSocket URL (read from the "DevTools listening on ws://…" line it prints).
fn launch(binary: &PathBuf, profile: &std::path::Path) -> (Browser, String) {
    let mut child = Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--remote-debugging-port=0",
            "--window-size=1100,760",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let stderr = child.stderr.take().unwrap();
    let browser = Browser(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("Chromium printed no DevTools URL within 60 s");
    (browser, url)
}

/// A minimal Chrome DevTools protocol client: numbered commands, replies matched by id, events
/// ignored.
struct Cdp {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    session: Option<String>,
}

impl Cdp {
    fn connect(url: &str) -> Self {
        let (ws, _) = tungstenite::connect(url).expect("connecting to the DevTools WebSocket");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        Cdp { ws, next_id: 1, session: None }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            let reply = self.ws.read().unwrap_or_else(|e| panic!("{method}: {e}"));
            let Ok(text) = reply.to_text() else { continue };
            let v: Value = serde_json::from_str(text).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method} failed: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// Evaluate a JavaScript expression in the page and return its value.
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Poll `expression` until it is true.
    fn wait_for(&mut self, expression: &str) {
        let t = Instant::now();
        while self.eval(expression) != json!(true) {
            let state = self.eval(
                "window.jinn ? JSON.stringify({steps: jinn.steps, index: jinn.index, err: jinn.lastError}) \
                 : 'not loaded: ' + location.href",
            );
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "timed out waiting for {expression}; page: {state}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn press(&mut self, key: &str, code: &str, key_code: u32) {
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code }),
            );
        }
    }

    fn click(&mut self, selector: &str) {
        let r = self.eval(&format!(
            "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// The canvas pixels as an RGB frame.
    fn canvas(&mut self) -> Frame {
        let rgba = self.eval(&format!(
            "Array.from(document.getElementById('frame').getContext('2d').getImageData(0, 0, {}, {}).data)",
            SHAPE.width, SHAPE.height
        ));
        let rgba: Vec<u8> = rgba.as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
        let pixels = rgba.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Frame { shape: SHAPE, pixels }
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

#[test]
fn keys_and_buttons_drive_the_page_in_headless_chromium() {
    let Some(binary) = find_chromium() else {
        assert_ne!(
            std::env::var("JINN_REQUIRE_BROWSER").as_deref(),
            Ok("1"),
            "JINN_REQUIRE_BROWSER=1 but no chromium on PATH (set JINN_CHROMIUM to its path)"
        );
        eprintln!("SKIPPED: no chromium on PATH (apt-get install chromium, or set JINN_CHROMIUM)");
        return;
    };
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

    let start = cdp.canvas();
    assert_eq!(start, FakeWorld::pattern(SHAPE, 0), "the page shows the first sampled frame exactly");

    cdp.press("ArrowRight", "ArrowRight", 39);
    cdp.wait_for("jinn.steps === 1 && !jinn.busy");
    let right = cdp.canvas();
    assert_ne!(right, start, "a key press changes the frame");
    assert_eq!(right, reference_step(&start, 1));

    cdp.press("z", "KeyZ", 90);
    cdp.wait_for("jinn.index === 0 && !jinn.busy");
    assert_eq!(cdp.canvas(), start, "undo shows the start frame again");

    cdp.press("ArrowLeft", "ArrowLeft", 37);
    cdp.wait_for("jinn.steps === 2 && !jinn.busy");
    let left = cdp.canvas();
    assert_ne!(left, right, "two actions from the same frame give different frames");
    assert_eq!(left, reference_step(&start, 0));

    cdp.click(r#"button.action[data-action="3"]"#);
    cdp.wait_for("jinn.steps === 3 && !jinn.busy");
    let down = cdp.canvas();
    assert_eq!(down, reference_step(&left, 3), "the on-screen button steps with its action");

    cdp.press(" ", "Space", 32);
    cdp.wait_for("jinn.steps === 4 && !jinn.busy");
    assert_eq!(cdp.canvas(), reference_step(&down, 4));

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
