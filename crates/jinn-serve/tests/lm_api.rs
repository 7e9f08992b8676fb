//! `POST /v1/lm/generate` over a real socket with the fake text model: streamed and whole
//! replies, every bad-input path, early client disconnects and serialised concurrent requests.

mod common;

use common::{start_models, TestServer};
use jinn_data::FrameShape;
use jinn_serve::fake::FakeWorld;
use jinn_serve::fake_text::FakeText;
use jinn_serve::{Limits, Models};
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn text_server(context: usize, delay: Duration, limits: Limits) -> TestServer {
    let text = Arc::new(FakeText::new(context, delay));
    start_models(Models { world: None, text: Some(text) }, limits)
}

/// The `(event, data)` pairs of a server-sent-event body.
fn events(body: &[u8]) -> Vec<(String, serde_json::Value)> {
    let text = std::str::from_utf8(body).expect("SSE is UTF-8");
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let field =
            |name: &str| block.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim_start().to_string());
        let event = field("event:").expect("every event is named");
        let data = serde_json::from_str(&field("data:").expect("every event has data")).unwrap();
        out.push((event, data));
    }
    out
}

#[test]
fn streams_every_piece_then_a_summary() {
    let s = text_server(64, Duration::ZERO, Limits::default());
    let prompt = "héllo, wörld";
    let reply = s.post("/v1/lm/generate", &format!(r#"{{"prompt": "{prompt}", "max_tokens": 30}}"#));
    assert_eq!(reply.status, 200);
    assert!(reply.content_type.starts_with("text/event-stream"), "{}", reply.content_type);
    let events = events(&reply.body);
    let (done, pieces) = events.split_last().unwrap();
    assert_eq!(done.0, "done");
    assert!(pieces.iter().all(|(e, _)| e == "token"));
    let text: String = pieces.iter().map(|(_, d)| d["text"].as_str().unwrap()).collect();
    assert_eq!(text, FakeText::expected(prompt, 30));
    assert_eq!(pieces.len(), 30, "one event per token");
    assert_eq!(done.1["tokens"], 30);
    assert_eq!(done.1["prompt_tokens"], prompt.chars().count());
    assert!(done.1["tokens_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn without_streaming_replies_with_the_whole_text() {
    let s = text_server(64, Duration::ZERO, Limits::default());
    let v = s.post("/v1/lm/generate", r#"{"prompt": "abc", "max_tokens": 7, "stream": false}"#).json();
    assert_eq!(v["text"], FakeText::expected("abc", 7));
    assert_eq!((v["tokens"].as_u64(), v["prompt_tokens"].as_u64()), (Some(7), Some(3)));
    let h = s.get("/v1/health").json();
    assert_eq!((h["model"].is_null(), h["text_model"].as_str()), (true, Some("fake-text")));
    let m = s.get("/v1/models").json();
    assert_eq!(m["text_models"][0]["context"], 64);
    assert_eq!(m["models"].as_array().map(Vec::len), Some(0));
    assert!(s.get("/v1/openapi.json").json()["paths"]["/v1/lm/generate"].is_object());
}

#[test]
fn bad_requests_are_clear_4xx_errors() {
    let limits = Limits { max_prompt_bytes: 32, max_new_tokens: 100, ..Limits::default() };
    let s = text_server(20, Duration::ZERO, limits);
    let cases: [(&[u8], &str); 9] = [
        (br#"{"prompt": ""}"#, "\"prompt\" is empty"),
        (br#"{"prompt": "0123456789012345678901234567890123"}"#, "34 bytes; the limit is 32"),
        (br#"{"prompt": "0123456789012345678901234"}"#, "context holds 20"),
        (br#"{"prompt": "a", "max_tokens": 0}"#, "expected 1 to 100"),
        (br#"{"prompt": "a", "max_tokens": 101}"#, "expected 1 to 100"),
        (br#"{"prompt": "a", "temperature": -1}"#, "\"temperature\" is -1"),
        (br#"{"prompt": "a", "colour": 1}"#, "unknown field `colour`"),
        (b"{\"prompt\": \"a\xff\"}", "not valid UTF-8 (first bad byte at offset 13)"),
        (br#"{"prompt": "a""#, "invalid JSON"),
    ];
    for (body, expected) in cases {
        let reply = s.call("POST", "/v1/lm/generate", Some(body));
        let message = reply.error(400);
        assert!(message.contains(expected), "{}: {message}", String::from_utf8_lossy(body));
    }
    assert!(s.post("/v1/world/sessions", "{}").error(404).contains("no world model"));
}

#[test]
fn a_world_only_server_says_it_has_no_text_model() {
    let world = Arc::new(FakeWorld::new(FrameShape::rgb(4, 4), Duration::ZERO));
    let s = start_models(Models { world: Some(world), text: None }, Limits::default());
    assert!(s.post("/v1/lm/generate", r#"{"prompt": "a"}"#).error(404).contains("no text model"));
}

#[test]
fn a_client_that_leaves_stops_its_generation() {
    let s = text_server(64, Duration::from_millis(20), Limits::default());
    let url = format!("{}/v1/lm/generate", s.base);
    // 1000 tokens at 20 ms would hold the model for 20 s; read one event and hang up.
    let mut res = s.agent.post(&url).send(r#"{"prompt": "abc", "max_tokens": 1000}"#.as_bytes()).unwrap();
    let mut lines = BufReader::new(res.body_mut().as_reader());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "event: token");
    drop(lines);
    drop(res);
    let t = Instant::now();
    let v = s.post("/v1/lm/generate", r#"{"prompt": "xy", "max_tokens": 3, "stream": false}"#).json();
    assert_eq!(v["text"], FakeText::expected("xy", 3));
    assert!(t.elapsed() < Duration::from_secs(5), "the abandoned generation released the model");
}

#[test]
fn concurrent_requests_each_get_their_own_text() {
    let s = text_server(64, Duration::from_millis(2), Limits::default());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    let prompt = format!("request {i}");
                    let body = format!(r#"{{"prompt": "{prompt}", "max_tokens": 25}}"#);
                    let events = events(&s.post("/v1/lm/generate", &body).body);
                    let text: String = events
                        .iter()
                        .filter(|(e, _)| e == "token")
                        .map(|(_, d)| d["text"].as_str().unwrap())
                        .collect();
                    assert_eq!(text, FakeText::expected(&prompt, 25));
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
    });
}
