//! Shared helpers of the jinn-serve integration tests: a server on 127.0.0.1:0 with a fake
//! model, a blocking HTTP client and a naive reference of the fake model's dynamics.
#![allow(dead_code)]

use jinn_data::FrameShape;
use jinn_serve::fake::FakeWorld;
use jinn_serve::{Frame, Limits, Models, ServeConfig, Server, WorldModel};
use std::sync::Arc;
use std::time::Duration;

/// A running server and the runtime it runs on.
pub struct TestServer {
    pub rt: tokio::runtime::Runtime,
    pub server: Option<Server>,
    pub base: String,
    pub agent: ureq::Agent,
}

pub fn start_with(model: Arc<dyn WorldModel>, limits: Limits) -> TestServer {
    start_models(Models { world: Some(model), text: None }, limits)
}

pub fn start_models(models: Models, limits: Limits) -> TestServer {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = ServeConfig { bind: "127.0.0.1:0".parse().unwrap(), limits };
    let server = rt.block_on(Server::start_models(models, config)).unwrap();
    let base = format!("http://{}", server.local_addr());
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    TestServer { rt, server: Some(server), base, agent }
}

pub fn start_fake(shape: FrameShape, limits: Limits) -> (TestServer, Arc<FakeWorld>) {
    let model = Arc::new(FakeWorld::new(shape, Duration::ZERO));
    (start_with(model.clone(), limits), model)
}

/// A reply: status, content type, body.
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The `error` message of a JSON error reply, checking the status is `status`.
    pub fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "body: {}", String::from_utf8_lossy(&self.body));
        assert!(self.content_type.starts_with("application/json"), "{}", self.content_type);
        let v = self.json();
        assert_eq!(v.as_object().unwrap().len(), 1, "only an error field: {v}");
        v["error"].as_str().expect("error is a string").to_string()
    }
}

impl TestServer {
    pub fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> Reply {
        let url = format!("{}{path}", self.base);
        let result = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            ("POST", Some(b)) => self.agent.post(&url).header("content-type", "application/json").send(b),
            ("POST", None) => self.agent.post(&url).send_empty(),
            ("PUT", _) => self.agent.put(&url).send_empty(),
            _ => panic!("method {method}"),
        };
        let mut res = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let content_type =
            res.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let body = res.body_mut().with_config().limit(64 << 20).read_to_vec().unwrap();
        Reply { status: res.status().as_u16(), content_type, body }
    }

    pub fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &str) -> Reply {
        self.call("POST", path, Some(body.as_bytes()))
    }

    /// Create a session from `body`; returns (id, frame).
    pub fn create(&self, body: &str, shape: FrameShape) -> (String, Frame) {
        let r = self.post("/v1/world/sessions", body);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        (v["id"].as_str().unwrap().to_string(), frame_of(&v, shape))
    }

    /// Step session `id` with `action`; returns (index, frame).
    pub fn step(&self, id: &str, action: u32, shape: FrameShape) -> (usize, Frame) {
        let r = self.post(&format!("/v1/world/sessions/{id}/step"), &format!("{{\"action\": {action}}}"));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        (v["index"].as_u64().unwrap() as usize, frame_of(&v, shape))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown()).unwrap();
        }
    }
}

/// The base64 PNG `frame` field of a reply, decoded.
pub fn frame_of(v: &serde_json::Value, shape: FrameShape) -> Frame {
    let png = jinn_serve::png::from_base64(v["frame"].as_str().expect("frame field")).unwrap();
    jinn_serve::png::decode_png(&png, shape).unwrap()
}

/// Naive reference of the fake model: arrows move the content one pixel, fire inverts.
pub fn reference_step(f: &Frame, action: u32) -> Frame {
    let (h, w, c) = (f.shape.height, f.shape.width, f.shape.channels);
    let mut out = f.pixels.clone();
    for y in 0..h {
        for x in 0..w {
            // The source pixel that lands on (y, x).
            let (sy, sx) = match action {
                0 => (y, (x + 1) % w),
                1 => (y, (x + w - 1) % w),
                2 => ((y + 1) % h, x),
                3 => ((y + h - 1) % h, x),
                _ => (y, x),
            };
            for k in 0..c {
                let v = f.pixels[(sy * w + sx) * c + k];
                out[(y * w + x) * c + k] = if action == 4 { 255 - v } else { v };
            }
        }
    }
    Frame { shape: f.shape, pixels: out }
}
