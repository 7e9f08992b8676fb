//! Progress display: an `indicatif` bar on a terminal, occasional plain lines otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A progress reporter over `total` units.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    unit: &'static str,
    last_line: Mutex<Instant>,
}

impl Progress {
    /// Start reporting.
    pub fn new(total: u64, unit: &'static str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {prefix} {msg} [{elapsed_precise}<{eta}]")
                    .expect("valid template"),
            );
            bar.set_prefix(unit);
            bar
        });
        Progress { bar, total, unit, last_line: Mutex::new(Instant::now()) }
    }

    /// Report `done` units with a short message.
    pub fn set(&self, done: u64, msg: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(msg.to_string());
            }
            None => {
                let mut last = self.last_line.lock().expect("progress lock");
                if last.elapsed() >= Duration::from_secs(5) || done == self.total {
                    eprintln!("{done}/{} {} {msg}", self.total, self.unit);
                    *last = Instant::now();
                }
            }
        }
    }

    /// Close the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
