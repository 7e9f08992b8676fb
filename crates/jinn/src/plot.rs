//! `jinn plot RUN`: loss and metric curves of a run's `metrics.jsonl` as a PNG.

use anyhow::Context;
use jinn_train::metrics_log::METRICS_FILE;
use jinn_train::plot::plot_metrics_file;
use std::path::PathBuf;

/// Arguments of `jinn plot`.
#[derive(clap::Args)]
pub struct PlotArgs {
    /// Run directory (holding metrics.jsonl), or a metrics.jsonl file.
    pub run: PathBuf,
    /// Output PNG (default: RUN/plot.png).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Comma-separated metric names to plot, train and val alike (default: all), e.g. loss,psnr.
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
}

/// Render the curves and print where they went.
pub fn run(a: PlotArgs) -> anyhow::Result<()> {
    let (jsonl, run_dir) = if a.run.is_dir() {
        (a.run.join(METRICS_FILE), a.run.clone())
    } else {
        (a.run.clone(), a.run.parent().map(PathBuf::from).unwrap_or_default())
    };
    if !jsonl.is_file() {
        anyhow::bail!(
            "{}: no such file; pass a run directory written by `jinn train` (it holds {METRICS_FILE})",
            jsonl.display()
        );
    }
    let out = a.out.unwrap_or_else(|| run_dir.join("plot.png"));
    let metrics: Vec<String> =
        a.metrics.iter().map(|m| m.trim().to_string()).filter(|m| !m.is_empty()).collect();
    let panels =
        plot_metrics_file(&jsonl, &out, &metrics).with_context(|| format!("plotting {}", jsonl.display()))?;
    println!("{} panels ({}) written to {}", panels.len(), panels.join(", "), out.display());
    Ok(())
}
