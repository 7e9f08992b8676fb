//! What the `jinn train` subcommands share: the fresh-run check and the closing summary.

use jinn_train::checkpoint::list_steps;
use jinn_train::metrics_log::{read_metrics, METRICS_FILE};
use jinn_train::train_loop::RunSummary;
use std::path::Path;

/// Refuse to start a new run in a directory that already holds checkpoints.
pub fn check_fresh_out(out: &Path, resume: bool) -> anyhow::Result<()> {
    if !resume && out.exists() && !list_steps(out)?.is_empty() {
        anyhow::bail!(
            "{} already holds checkpoints; pass --resume to continue that run or choose another --out",
            out.display()
        );
    }
    Ok(())
}

/// Print the steps run, the time per step, skipped checkpoints and the last metrics.
/// `secs` is the wall time of the whole run.
/// Only rank 0 of a data-parallel run prints (it alone wrote the metrics).
pub fn print_summary(summary: &RunSummary, secs: f64, out: &Path) -> anyhow::Result<()> {
    if !jinn_train::distributed::is_leader() {
        return Ok(());
    }
    let steps = summary.end_step - summary.start_step;
    println!(
        "steps {}..{} in {secs:.1} s ({:.0} ms/step, including validation and checkpoints)",
        summary.start_step,
        summary.end_step,
        1000.0 * secs / steps.max(1) as f64
    );
    for (path, why) in &summary.skipped_checkpoints {
        println!("skipped corrupted checkpoint {}: {why}", path.display());
    }
    let records = read_metrics(&out.join(METRICS_FILE))?;
    for split in ["train", "val"] {
        if let Some(r) = records.iter().rev().find(|r| r.split == split) {
            let m: Vec<String> = r.metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
            println!("{split} @ step {}: {}", r.step, m.join(", "));
        }
    }
    Ok(())
}
