//! Headless Chromium driven over the Chrome DevTools protocol, for the play page's end-to-end
//! tests (this crate's and the `jinn` binary's).
//!
//! The protocol is spoken directly, with a few JSON commands on a WebSocket (`tungstenite`): the
//! CDP client crates (`headless_chrome`, `chromiumoxide`) generate bindings for the whole
//! protocol and take minutes to compile on CI's 2 cores, and these tests need six commands.

#![allow(dead_code)]

use jinn_data::FrameShape;
use jinn_serve::Frame;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// The Chromium binary: `$JINN_CHROMIUM`, else the first of the usual names on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("JINN_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// The Chromium binary, or `None` after saying why the test skips; fails instead when
/// `JINN_REQUIRE_BROWSER=1` (CI).
pub fn chromium_or_skip() -> Option<PathBuf> {
    let found = find_chromium();
    if found.is_none() {
        assert_ne!(
            std::env::var("JINN_REQUIRE_BROWSER").as_deref(),
            Ok("1"),
            "JINN_REQUIRE_BROWSER=1 but no chromium on PATH (set JINN_CHROMIUM to its path)"
        );
        eprintln!("SKIPPED: no chromium on PATH (apt-get install chromium, or set JINN_CHROMIUM)");
    }
    found
}

/// The browser process, killed when dropped.
pub struct Browser(Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start headless Chromium with remote debugging on a free port; returns it and its browser
/// WebSocket URL (read from the "DevTools listening on ws://…" line it prints).
pub fn launch(binary: &PathBuf, profile: &std::path::Path) -> (Browser, String) {
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
pub struct Cdp {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    pub session: Option<String>,
}

impl Cdp {
    pub fn connect(url: &str) -> Self {
        let (ws, _) = tungstenite::connect(url).expect("connecting to the DevTools WebSocket");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        Cdp { ws, next_id: 1, session: None }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
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
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Poll `expression` until it is true.
    pub fn wait_for(&mut self, expression: &str) {
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

    pub fn press(&mut self, key: &str, code: &str, key_code: u32) {
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code }),
            );
        }
    }

    pub fn click(&mut self, selector: &str) {
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
    pub fn canvas(&mut self, shape: FrameShape) -> Frame {
        let rgba = self.eval(&format!(
            "Array.from(document.getElementById('frame').getContext('2d').getImageData(0, 0, {}, {}).data)",
            shape.width, shape.height
        ));
        let rgba: Vec<u8> = rgba.as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
        let pixels = rgba.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Frame { shape, pixels }
    }
}
