//! Test support shared by the `jinn` binary's integration tests: `jinn play` on a loopback
//! port and JSON requests to it, and a small text corpus.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `jinn play` process serving on a free loopback port; killed when dropped.
pub struct PlayServer {
    child: Child,
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: String,
}

impl PlayServer {
    /// Start `jinn play --ckpt run --data data --no-browser --port 0` plus `extra`, and wait for
    /// the URL it prints.
    pub fn start(run: &Path, data: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jinn"))
            .args(["play", "--ckpt", run.to_str().unwrap(), "--data", data.to_str().unwrap()])
            .args(["--no-browser", "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start jinn play");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).map(str::to_string);
        // Built before the URL check, so a server that printed none is killed by the panic.
        let mut server = PlayServer { child, base: String::new() };
        let Some(url) = url else { panic!("no URL in: {line}") };
        server.base = url.trim_end_matches('/').to_string();
        server
    }

    /// POST the JSON `body` to `path`; returns the status and the JSON reply.
    pub fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut r = agent
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        let status = r.status().as_u16();
        (status, serde_json::from_slice(&r.body_mut().read_to_vec().unwrap()).unwrap())
    }
}

impl Drop for PlayServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A corpus of the first 6 kB of two shipped plays, in `dir/corpus`.
pub fn shakespeare_excerpt(dir: &Path) -> PathBuf {
    let plays = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/text/shakespeare");
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    for play in ["macbeth_gut_f.txt", "tempest_gut_f.txt"] {
        let text = std::fs::read_to_string(plays.join(play)).unwrap();
        let cut = text.char_indices().map(|(i, _)| i).find(|&i| i >= 6000).unwrap();
        std::fs::write(corpus.join(play), &text[..cut]).unwrap();
    }
    corpus
}
