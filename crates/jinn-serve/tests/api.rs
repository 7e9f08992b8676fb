//! The HTTP API over a real socket (127.0.0.1:0) with the fake model: every route, every error
//! path, limits, idle reaping, concurrent sessions.

mod common;

use common::{reference_step, start_fake, start_with};
use jinn_data::FrameShape;
use jinn_serve::fake::FakeWorld;
use jinn_serve::png::{encode_png, to_base64};
use jinn_serve::{Frame, Limits, ModelError, ModelInfo, StartSource, WorldModel, WorldState};
use std::sync::Arc;
use std::time::Duration;

const SHAPE: FrameShape = FrameShape { height: 6, width: 8, channels: 3 };

#[test]
fn health_models_openapi_and_the_page() {
    let (s, _) = start_fake(SHAPE, Limits::default());
    let h = s.get("/v1/health").json();
    assert_eq!(
        (h["status"].as_str(), h["model"].as_str(), h["sessions"].as_u64()),
        (Some("ok"), Some("fake"), Some(0))
    );

    let m = s.get("/v1/models").json();
    let model = &m["models"][0];
    assert_eq!(model["frame"], serde_json::json!({"height": 6, "width": 8, "channels": 3}));
    let labels: Vec<&str> =
        model["actions"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["left", "right", "up", "down", "fire"]);
    assert_eq!(model["actions"][1]["key"], "ArrowRight");
    assert_eq!(model["splits"][1], serde_json::json!({"name": "val", "episodes": 2}));

    let api = s.get("/v1/openapi.json").json();
    assert_eq!(api["openapi"], "3.0.3");
    for path in [
        "/v1/health",
        "/v1/models",
        "/v1/world/sessions",
        "/v1/world/sessions/{id}",
        "/v1/world/sessions/{id}/step",
        "/v1/world/sessions/{id}/undo",
        "/v1/world/sessions/{id}/frames/{i}",
        "/v1/world/sessions/{id}/gif",
        "/v1/openapi.json",
    ] {
        assert!(api["paths"][path].is_object(), "{path} described");
    }

    let page = s.get("/");
    assert_eq!((page.status, page.content_type.as_str()), (200, "text/html; charset=utf-8"));
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("/app.js") && html.contains("/style.css"));
    assert!(!html.contains("http://") && !html.contains("https://"), "no external resources");
    let js = s.get("/app.js");
    assert!(
        js.content_type.starts_with("text/javascript")
            && String::from_utf8(js.body).unwrap().contains("/v1/models")
    );
    let css = String::from_utf8(s.get("/style.css").body).unwrap();
    assert!(css.contains("image-rendering: pixelated"));
}

#[test]
fn a_session_steps_undoes_serves_frames_and_a_gif_then_closes() {
    let (s, _) = start_fake(SHAPE, Limits::default());
    let (id, start) = s.create("{}", SHAPE);
    assert_eq!(start, FakeWorld::pattern(SHAPE, 0), "the first sample");
    assert_eq!(id.len(), 32);

    let (i1, right) = s.step(&id, 1, SHAPE);
    assert_eq!((i1, &right), (1, &reference_step(&start, 1)));
    let (i2, down) = s.step(&id, 3, SHAPE);
    assert_eq!((i2, &down), (2, &reference_step(&right, 3)));
    let info = s.get(&format!("/v1/world/sessions/{id}")).json();
    assert_eq!((info["frames"].as_u64(), info["undo_steps"].as_u64()), (Some(3), Some(2)));

    // Frames by index are the PNGs of what the steps returned.
    for (i, want) in [(0, &start), (1, &right), (2, &down)] {
        let r = s.get(&format!("/v1/world/sessions/{id}/frames/{i}"));
        assert_eq!((r.status, r.content_type.as_str()), (200, "image/png"));
        assert_eq!(&jinn_serve::png::decode_png(&r.body, SHAPE).unwrap(), want);
    }

    // Undo returns to the previous frame and the model state: the next step continues from it.
    let u = s.post(&format!("/v1/world/sessions/{id}/undo"), "");
    assert_eq!(u.status, 200);
    let u = u.json();
    assert_eq!((u["index"].as_u64(), u["undo_steps"].as_u64()), (Some(1), Some(1)));
    assert_eq!(common::frame_of(&u, SHAPE), right);
    let (i, left) = s.step(&id, 0, SHAPE);
    assert_eq!((i, &left), (2, &start), "right then left is the start again");
    s.post(&format!("/v1/world/sessions/{id}/undo"), "");
    s.post(&format!("/v1/world/sessions/{id}/undo"), "");
    let e = s.post(&format!("/v1/world/sessions/{id}/undo"), "").error(409);
    assert!(e.contains("nothing to undo"), "{e}");
    let (_, fire) = s.step(&id, 4, SHAPE);
    assert_eq!(fire, reference_step(&start, 4));

    // The GIF holds every frame of the session, upscaled.
    let g = s.get(&format!("/v1/world/sessions/{id}/gif"));
    assert_eq!((g.status, g.content_type.as_str()), (200, "image/gif"));
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut d = opts.read_info(&g.body[..]).unwrap();
    assert_eq!((d.width(), d.height()), (8 * 8, 6 * 8), "scale 8 (256 / 8 capped at 8)");
    let mut decoded = Vec::new();
    while let Some(f) = d.read_next_frame().unwrap() {
        decoded.push(f.buffer.to_vec());
    }
    assert_eq!(decoded.len(), 2);
    let px = |rgba: &[u8], y: usize, x: usize| rgba[(y * 8 * 64 + x * 8) * 4..][..3].to_vec();
    assert_eq!(px(&decoded[1], 5, 7), fire.pixels[(5 * 8 + 7) * 3..][..3].to_vec());

    assert_eq!(s.call("DELETE", &format!("/v1/world/sessions/{id}"), None).status, 204);
    s.post(&format!("/v1/world/sessions/{id}/step"), r#"{"action": 0}"#).error(404);
    assert_eq!(s.get("/v1/health").json()["sessions"], 0);
}

#[test]
fn sessions_start_from_a_dataset_frame_or_uploaded_pngs() {
    let (s, _) = start_fake(SHAPE, Limits::default());
    let body = r#"{"dataset": {"split": "val", "episode": 1, "frame": 3}}"#;
    let (_, a) = s.create(body, SHAPE);
    let (_, b) = s.create(body, SHAPE);
    let (_, c) = s.create(r#"{"dataset": {"split": "val", "episode": 1}, "model": "fake"}"#, SHAPE);
    assert_eq!(a, b, "the same dataset frame twice");
    assert_ne!(a, c, "frame 0 differs from frame 3");

    let mine =
        Frame { shape: SHAPE, pixels: (0..SHAPE.frame_bytes()).map(|i| (i * 5 % 256) as u8).collect() };
    let other = FakeWorld::pattern(SHAPE, 99);
    let b64 = |f: &Frame| to_base64(&encode_png(f).unwrap());
    let body = format!(r#"{{"frames": ["{}", "data:image/png;base64,{}"]}}"#, b64(&other), b64(&mine));
    let (id, first) = s.create(&body, SHAPE);
    assert_eq!(first, mine, "the last uploaded frame is the current one");
    let r = s.get(&format!("/v1/world/sessions/{id}")).json();
    assert_eq!(r["frames"], 2);
    assert_eq!(s.step(&id, 2, SHAPE), (2, reference_step(&mine, 2)));
}

/// A request to make, deferred.
type Call<'a> = Box<dyn Fn() -> common::Reply + 'a>;

#[test]
fn bad_requests_get_4xx_with_a_message() {
    let (s, _) = start_fake(SHAPE, Limits { max_body_bytes: 4096, ..Limits::default() });
    let (id, _) = s.create("{}", SHAPE);
    let step = format!("/v1/world/sessions/{id}/step");
    let create = "/v1/world/sessions";
    let small = Frame { shape: FrameShape::rgb(6, 7), pixels: vec![0; 6 * 7 * 3] };
    let small = to_base64(&encode_png(&small).unwrap());
    let ok_png = to_base64(&encode_png(&FakeWorld::pattern(SHAPE, 1)).unwrap());

    let cases: Vec<(Call, u16, &str)> = vec![
        (
            Box::new(|| s.post(&step, r#"{"action": 5}"#)),
            400,
            "unknown action 5; this model has actions 0 to 4",
        ),
        (Box::new(|| s.post(&step, r#"{"action": -1}"#)), 400, "invalid JSON body"),
        (Box::new(|| s.post(&step, r#"{"action": "left"}"#)), 400, "invalid type"),
        (Box::new(|| s.post(&step, r#"{"action": 1"#)), 400, "EOF"),
        (Box::new(|| s.post(&step, "{}")), 400, "missing field `action`"),
        (Box::new(|| s.post(&step, r#"{"action": 1, "speed": 2}"#)), 400, "unknown field `speed`"),
        (Box::new(|| s.post(create, "[1, 2")), 400, "invalid JSON body"),
        (
            Box::new(|| s.post(create, &format!(r#"{{"frames": ["{small}"]}}"#))),
            400,
            "frames[0] is 7x6 pixels (width x height); the model expects 8x6",
        ),
        (Box::new(|| s.post(create, r#"{"frames": ["@@@"]}"#)), 400, "frames[0] not valid base64"),
        (Box::new(|| s.post(create, r#"{"frames": ["aGVsbG8="]}"#)), 400, "frames[0] not a readable PNG"),
        (Box::new(|| s.post(create, r#"{"frames": []}"#)), 400, "expected 1 to 4"),
        (
            Box::new(|| {
                s.post(create, &format!(r#"{{"frames": ["{ok_png}"], "dataset": {{"split": "val"}}}}"#))
            }),
            400,
            "not both",
        ),
        (Box::new(|| s.post(create, r#"{"dataset": {"split": "test"}}"#)), 404, "no split \"test\""),
        (
            Box::new(|| s.post(create, r#"{"dataset": {"split": "val", "episode": 2}}"#)),
            404,
            "it has 2 episodes",
        ),
        (Box::new(|| s.post(create, r#"{"model": "genie"}"#)), 404, "no model \"genie\"; loaded: \"fake\""),
        (
            Box::new(|| s.post(create, &format!(r#"{{"frames": ["{}"]}}"#, "A".repeat(5000)))),
            413,
            "too large",
        ),
        (Box::new(|| s.post("/v1/world/sessions/nope/step", r#"{"action": 0}"#)), 404, "no session \"nope\""),
        (Box::new(|| s.post("/v1/world/sessions/nope/undo", "")), 404, "no session"),
        (Box::new(|| s.get("/v1/world/sessions/nope")), 404, "no session"),
        (Box::new(|| s.get("/v1/world/sessions/nope/frames/0")), 404, "no session"),
        (Box::new(|| s.get("/v1/world/sessions/nope/gif")), 404, "no session"),
        (Box::new(|| s.call("DELETE", "/v1/world/sessions/nope", None)), 404, "no session"),
        (
            Box::new(|| s.get(&format!("/v1/world/sessions/{id}/frames/1"))),
            404,
            "no frame 1; the session has frames 0 to 0",
        ),
        (Box::new(|| s.get(&format!("/v1/world/sessions/{id}/frames/x"))), 400, "bad path"),
        (Box::new(|| s.get("/v2/health")), 404, "no route GET /v2/health"),
        (Box::new(|| s.call("PUT", "/v1/health", None)), 405, "PUT is not allowed on /v1/health"),
    ];
    for (i, (call, status, needle)) in cases.iter().enumerate() {
        let message = call().error(*status);
        assert!(message.contains(needle), "case {i}: {message:?} lacks {needle:?}");
    }
    // After all that the session still works.
    assert_eq!(s.step(&id, 1, SHAPE).0, 1);
}

#[test]
fn limits_on_sessions_frames_and_undo() {
    let limits = Limits { max_sessions: 2, max_frames: 4, max_undo: 2, ..Limits::default() };
    let (s, _) = start_fake(SHAPE, limits);
    let (a, _) = s.create("{}", SHAPE);
    s.create("{}", SHAPE);
    let e = s.post("/v1/world/sessions", "{}").error(429);
    assert!(e.contains("2 sessions are open, the limit"), "{e}");
    assert_eq!(s.call("DELETE", &format!("/v1/world/sessions/{a}"), None).status, 204);
    let (id, _) = s.create("{}", SHAPE);

    for _ in 0..3 {
        s.step(&id, 0, SHAPE);
    }
    let e = s.post(&format!("/v1/world/sessions/{id}/step"), r#"{"action": 0}"#).error(409);
    assert!(e.contains("4 frames, the limit"), "{e}");
    for _ in 0..2 {
        assert_eq!(s.post(&format!("/v1/world/sessions/{id}/undo"), "").status, 200);
    }
    s.post(&format!("/v1/world/sessions/{id}/undo"), "").error(409);
    assert_eq!(s.get(&format!("/v1/world/sessions/{id}")).json()["frames"], 2);
}

#[test]
fn idle_sessions_are_reaped_and_used_ones_kept() {
    let limits = Limits { idle_timeout: Duration::from_millis(300), ..Limits::default() };
    let (s, _) = start_fake(SHAPE, limits);
    let (idle, _) = s.create("{}", SHAPE);
    let (busy, _) = s.create("{}", SHAPE);
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(80));
        s.step(&busy, 1, SHAPE);
    }
    s.post(&format!("/v1/world/sessions/{idle}/step"), r#"{"action": 0}"#).error(404);
    assert_eq!(s.get("/v1/health").json()["sessions"], 1);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(s.get("/v1/health").json()["sessions"], 0);
    s.get(&format!("/v1/world/sessions/{busy}")).error(404);
}

#[test]
fn concurrent_sessions_each_follow_their_own_actions_and_inference_is_serialised() {
    let model = Arc::new(FakeWorld::new(SHAPE, Duration::from_millis(2)));
    let s = Arc::new(start_with(model.clone(), Limits::default()));
    let threads: Vec<_> = (0..6u32)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                let (id, mut want) = s.create("{}", SHAPE);
                for k in 0..15u32 {
                    let action = (t * 7 + k * 3) % 5;
                    want = reference_step(&want, action);
                    let (index, got) = s.step(&id, action, SHAPE);
                    assert_eq!((index, &got), (k as usize + 1, &want), "thread {t} step {k}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(model.max_concurrent_calls(), 1, "one model call at a time");
    assert_eq!(s.get("/v1/health").json()["sessions"], 6);
}

/// Fails on "fire" after changing its state, to check the server restores the state.
struct FailsOnFire(FakeWorld);

impl WorldModel for FailsOnFire {
    fn info(&self) -> &ModelInfo {
        self.0.info()
    }
    fn start_frames(&self, source: &StartSource) -> Result<Vec<Frame>, ModelError> {
        self.0.start_frames(source)
    }
    fn start(&self, frames: &[Frame]) -> Result<WorldState, ModelError> {
        self.0.start(frames)
    }
    fn step(&self, state: &mut WorldState, action: u32) -> Result<Frame, ModelError> {
        let out = self.0.step(state, action)?;
        if action == 4 {
            return Err(ModelError::Failed("simulated inference failure".into()));
        }
        Ok(out)
    }
}

#[test]
fn a_failing_model_gives_500_and_leaves_the_session_as_it_was() {
    let s = start_with(Arc::new(FailsOnFire(FakeWorld::new(SHAPE, Duration::ZERO))), Limits::default());
    let (id, start) = s.create("{}", SHAPE);
    let e = s.post(&format!("/v1/world/sessions/{id}/step"), r#"{"action": 4}"#).error(500);
    assert!(e.contains("simulated inference failure"), "{e}");
    assert_eq!(s.step(&id, 1, SHAPE), (1, reference_step(&start, 1)), "state restored, no frame added");
}
