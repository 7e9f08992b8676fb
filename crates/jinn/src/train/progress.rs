//! Training progress: an `indicatif` bar (step/total, loss, ms/step, ETA) when stderr is a
//! terminal, otherwise a plain line every [`LINE_INTERVAL`] and at the last step.

use indicatif::{ProgressBar, ProgressStyle};
use jinn_train::train_loop::{Metrics, RunObserver, RunSummary, StepReport};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Time between plain progress lines when stderr is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(10);

/// Smoothing of the ms/step estimate (weight of the newest step).
const EMA_WEIGHT: f64 = 0.1;

/// A [`RunObserver`] that shows training progress on stderr (on rank 0 only in a
/// data-parallel run).
pub struct TrainProgress {
    /// Not rank 0 of a data-parallel run: show nothing.
    quiet: bool,
    bar: Option<ProgressBar>,
    last_line: Instant,
    ms_per_step: Option<f64>,
}

impl TrainProgress {
    /// A bar if stderr is a terminal, plain lines otherwise.
    pub fn new() -> Self {
        Self::with_bar(std::io::stderr().is_terminal())
    }

    fn with_bar(bar: bool) -> Self {
        let quiet = !jinn_train::distributed::is_leader();
        let bar = (bar && !quiet).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {msg}  [{elapsed_precise}<{eta}]")
                    .expect("valid template"),
            );
            bar
        });
        TrainProgress { quiet, bar, last_line: Instant::now(), ms_per_step: None }
    }

    /// `loss 0.1234  850 ms/step`.
    fn message(&self, metrics: &Metrics) -> String {
        let loss = metrics.get("loss").map_or(String::new(), |l| format!("loss {l:.4}  "));
        format!("{loss}{:.0} ms/step", self.ms_per_step.unwrap_or(0.0))
    }
}

/// `1h02m03s`, `4m05s`, `6s`.
pub fn format_eta(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, sec) => format!("{h}h{m:02}m{sec:02}s"),
    }
}

impl RunObserver for TrainProgress {
    fn on_start(&mut self, start_step: u64, end_step: u64) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => {
                bar.set_length(end_step);
                bar.set_position(start_step);
                bar.reset_eta();
            }
            None => eprintln!("training steps {start_step}..{end_step}"),
        }
    }

    fn on_step(&mut self, r: &StepReport<'_>) {
        if self.quiet {
            return;
        }
        let ms = r.step_time.as_secs_f64() * 1000.0;
        self.ms_per_step = Some(self.ms_per_step.map_or(ms, |m| m + EMA_WEIGHT * (ms - m)));
        let msg = self.message(r.metrics);
        match &self.bar {
            Some(bar) => {
                bar.set_position(r.step);
                bar.set_message(msg);
            }
            None => {
                if self.last_line.elapsed() >= LINE_INTERVAL || r.step == r.end_step {
                    let left = r.end_step.saturating_sub(r.step) as f64;
                    let eta = Duration::from_secs_f64(left * self.ms_per_step.unwrap_or(0.0) / 1000.0);
                    eprintln!("step {}/{}  {msg}  ETA {}", r.step, r.end_step, format_eta(eta));
                    self.last_line = Instant::now();
                }
            }
        }
    }

    fn on_validation(&mut self, step: u64, metrics: &Metrics) {
        if self.quiet {
            return;
        }
        let m: Vec<String> = ["loss", "psnr", "ssim"]
            .iter()
            .filter_map(|k| metrics.get(*k).map(|v| format!("{k} {v:.4}")))
            .collect();
        let line = format!("val @ step {step}: {}", m.join(", "));
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn on_finish(&mut self, _summary: &RunSummary) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_formats() {
        assert_eq!(format_eta(Duration::from_secs(6)), "6s");
        assert_eq!(format_eta(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_eta(Duration::from_secs(3723)), "1h02m03s");
    }

    #[test]
    fn smooths_ms_per_step_and_shows_the_loss() {
        let mut p = TrainProgress::with_bar(false);
        let metrics = Metrics::from([("loss".to_string(), 0.5)]);
        for (step, ms) in [(1, 100), (2, 200)] {
            p.on_step(&StepReport {
                step,
                start_step: 0,
                end_step: 10,
                step_time: Duration::from_millis(ms),
                metrics: &metrics,
            });
        }
        // 100, then 100 + 0.1·(200 − 100) = 110.
        assert!((p.ms_per_step.unwrap() - 110.0).abs() < 1e-9);
        assert_eq!(p.message(&metrics), "loss 0.5000  110 ms/step");
    }
}
