//! `jinn eval world`: next-frame and rollout quality, controllability (ΔPSNR), LAM /
//! true-action agreement (NMI) and object scores of a trained world model on a split (metrics
//! in `jinn_world::world_eval`).

use crate::device::DeviceArgs;
use crate::sampler_args::SamplerArgs;
use anyhow::{bail, Context};
use jinn_data::atomic_file::write_atomically;
use jinn_data::dataset::Dataset;
use jinn_data::loader::{Loader, LoaderConfig};
use jinn_data::objects::Game;
use jinn_world::world_eval::clip_spread::{ClipSpread, INTERVAL};
use jinn_world::world_eval::objects::{EventScores, ObjectScores};
use jinn_world::world_eval::WorldObjectMetrics;
use jinn_world::{load_world, DynamicsKind, WorldEval, WorldEvalConfig, WorldMetrics};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `jinn eval world`.
#[derive(clap::Args, Clone)]
pub struct EvalWorldArgs {
    /// Dynamics run directory (its newest good checkpoint; tokenizer and LAM come with it).
    #[arg(long)]
    pub ckpt: PathBuf,
    /// Further dynamics runs (any kind: MaskGIT, causal, diffusion) evaluated on the same clips
    /// with the same sampler settings; prints one comparison table and writes
    /// `OUT/<i>-<run>/metrics.json` for each run and `OUT/comparison.json` (repeatable).
    #[arg(long = "compare", value_name = "RUN")]
    pub compare: Vec<PathBuf>,
    /// Dataset directory holding the split.
    #[arg(long)]
    pub data: PathBuf,
    /// Split to evaluate: a subdirectory of `--data`.
    #[arg(long, default_value = "val")]
    pub split: String,
    /// Clips evaluated (windows of context + frames frames, drawn by the seeded loader; one
    /// per episode while the split has enough episodes).
    #[arg(long, default_value_t = 16)]
    pub episodes: usize,
    /// Clips whose LAM codes the NMI is computed over (at least `--episodes`: the evaluated
    /// clips, then further clips that only the LAM encodes; the NMI of 16 clips, 240
    /// transitions, moves by ±0.05 between draws).
    #[arg(long, default_value_t = DEFAULT_NMI_CLIPS)]
    pub nmi_clips: usize,
    /// Clips sampled together.
    #[arg(long, default_value_t = 4)]
    pub batch_size: usize,
    /// Ground-truth context frames.
    #[arg(long, default_value_t = 1)]
    pub context: usize,
    /// Frames generated after the context.
    #[arg(long, default_value_t = 15)]
    pub frames: usize,
    /// Sampler settings.
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Seed of the clip choice, the sampling and the random actions.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory (gets metrics.json).
    #[arg(long, default_value = "eval-world")]
    pub out: PathBuf,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Clips the NMI is taken over unless `--nmi-clips` says otherwise (3840 transitions of 16
/// frames).
pub const DEFAULT_NMI_CLIPS: usize = 256;

/// Run `jinn eval world`: evaluate, write metrics.json, print the table (with `--compare`:
/// every run, then one comparison table).
pub fn run(a: EvalWorldArgs) -> anyhow::Result<()> {
    if a.compare.is_empty() {
        let (m, _) = evaluate_world(&a)?;
        print_table(&m);
        println!("metrics written to {}", a.out.join("metrics.json").display());
        return Ok(());
    }
    let runs: Vec<PathBuf> = std::iter::once(a.ckpt.clone()).chain(a.compare.iter().cloned()).collect();
    let mut rows = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let name = run.file_name().map_or_else(|| format!("run{i}"), |n| n.to_string_lossy().into_owned());
        let one = EvalWorldArgs {
            ckpt: run.clone(),
            compare: Vec::new(),
            out: a.out.join(format!("{i}-{name}")),
            ..a.clone()
        };
        let (m, kind) = evaluate_world(&one)?;
        print_table(&m);
        rows.push(serde_json::json!({ "run": run, "kind": kind.name(), "metrics": m }));
    }
    print_comparison(&rows);
    let path = a.out.join("comparison.json");
    write_atomically(&path, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    println!("comparison written to {}", path.display());
    Ok(())
}

/// One row per run: kind, rollout PSNR/SSIM, teacher-forced next-frame PSNR/SSIM, ΔPSNR.
fn print_comparison(rows: &[serde_json::Value]) {
    println!(
        "  {:<28} {:<10} {:>12} {:>12} {:>10} {:>10} {:>8}",
        "run", "kind", "rollout PSNR", "rollout SSIM", "next PSNR", "next SSIM", "ΔPSNR"
    );
    for r in rows {
        let m = &r["metrics"];
        let f = |k: &str| m[k].as_f64().unwrap_or(f64::NAN);
        let run = r["run"].as_str().unwrap_or("?");
        let run = run.rsplit('/').find(|p| !p.is_empty()).unwrap_or(run);
        println!(
            "  {:<28} {:<10} {:>12.2} {:>12.4} {:>10.2} {:>10.4} {:>8.2}",
            run,
            r["kind"].as_str().unwrap_or("?"),
            f("rollout_psnr"),
            f("rollout_ssim"),
            f("next_frame_psnr"),
            f("next_frame_ssim"),
            f("delta_psnr")
        );
    }
}

/// Evaluate the world model of `a.ckpt` and write `a.out/metrics.json` (atomically); returns
/// the metrics and the model's dynamics kind.
pub fn evaluate_world(a: &EvalWorldArgs) -> anyhow::Result<(WorldMetrics, DynamicsKind)> {
    if a.episodes == 0 || a.batch_size == 0 {
        bail!("--episodes and --batch-size must be ≥ 1 (got {} and {})", a.episodes, a.batch_size);
    }
    if a.context == 0 || a.frames == 0 {
        bail!("--context and --frames must be ≥ 1 (got {} and {})", a.context, a.frames);
    }
    let device = a.device.device();
    let (model, _cfg, step) = load_world(&a.ckpt, &device)
        .with_context(|| format!("--ckpt {}: loading the world model", a.ckpt.display()))?;
    let s = a.context + a.frames;
    let split = a.data.join(&a.split);
    let grid = model.grid();
    let want = jinn_data::FrameShape { height: grid.height, width: grid.width, channels: grid.channels };
    let dataset = Dataset::open_for_model(&split, s, want).with_context(|| {
        format!("--data {}: opening split '{}' (episodes of ≥ {s} frames)", a.data.display(), a.split)
    })?;
    let loader_cfg = LoaderConfig {
        batch_size: a.batch_size.min(a.episodes),
        seq_len: s,
        seed: a.seed,
        threads: 0,
        ..Default::default()
    };
    let game = dataset.metadata().and_then(|m| Game::from_env_name(&m.env));
    let mut loader = Loader::new(Arc::new(dataset), loader_cfg)?;
    let sampler = a.sampler.config(a.seed, &a.ckpt);
    let mut eval = WorldEval::new(WorldEvalConfig { context: a.context, frames: a.frames, sampler, game })?;
    eprintln!(
        "evaluating {} at step {step} on {}: {} clips, {} context + {} generated frames",
        a.ckpt.display(),
        split.display(),
        a.episodes,
        a.context,
        a.frames
    );
    let progress = crate::progress::Progress::new(a.episodes as u64, "clips");
    let started = Instant::now();
    while eval.clips() < a.episodes {
        let batch =
            loader.next().with_context(|| format!("{}: the loader yielded no clip", split.display()))??;
        let want = a.episodes - eval.clips();
        eval.add_batch(model.as_ref(), &batch, want)
            .with_context(|| format!("evaluating clips of {}", split.display()))?;
        progress.set(eval.clips() as u64, "");
    }
    progress.finish();
    let mut nmi_clips = a.episodes;
    if eval.lam_transitions() > 0 {
        while nmi_clips < a.nmi_clips {
            let batch = loader
                .next()
                .with_context(|| format!("{}: the loader yielded no clip", split.display()))??;
            let take = (a.nmi_clips - nmi_clips).min(batch.batch_size);
            eval.add_lam_codes(model.as_ref(), &batch, take)
                .with_context(|| format!("LAM codes of clips of {}", split.display()))?;
            nmi_clips += take;
        }
    }
    let metrics = eval.finish()?;
    let nmi_clips = if metrics.nmi.is_some() { nmi_clips } else { 0 };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let json = serde_json::json!({
        "checkpoint": a.ckpt,
        "step": step,
        "data": a.data,
        "split": a.split,
        "kind": model.kind().name(),
        "maskgit_steps": a.sampler.steps,
        "denoise_steps": a.sampler.denoise_steps,
        "context_noise": a.sampler.context_noise,
        "temperature": a.sampler.temperature,
        "argmax": a.sampler.argmax,
        "seed": a.seed,
        "seconds": started.elapsed().as_secs_f64(),
        "nmi_clips": nmi_clips,
        "nmi_normalisation": "geometric: I / sqrt(H(codes) H(actions)); nmi_arithmetic: I / ((H + H) / 2)",
        "metrics": metrics,
    });
    write_atomically(a.out.join("metrics.json"), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok((metrics, model.kind()))
}

/// The summary rows (name, value, target): beating the copied frame and ΔPSNR ≥ 1 dB are
/// targets on any data; the demo's PSNR and NMI targets only on breakout, the game they were
/// set for.
fn summary_rows(m: &WorldMetrics) -> [(&'static str, String, &'static str); 9] {
    let opt = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let breakout = m.objects.as_ref().is_some_and(|o| o.game == "breakout");
    let demo_target = |target: &'static str| if breakout { target } else { "" };
    [
        ("next-frame PSNR (dB, teacher-forced)", format!("{:.2}", m.next_frame_psnr), ""),
        ("next-frame SSIM", format!("{:.4}", m.next_frame_ssim), ""),
        ("rollout PSNR (dB, LAM actions)", format!("{:.2}", m.rollout_psnr), demo_target("≥ 25")),
        ("rollout SSIM", format!("{:.4}", m.rollout_ssim), ""),
        ("rollout PSNR (dB, random actions)", format!("{:.2}", m.random_action_psnr), ""),
        ("PSNR (dB, copy last context frame)", format!("{:.2}", m.copy_last_frame_psnr), "< rollout"),
        ("controllability ΔPSNR (dB)", format!("{:.2}", m.delta_psnr), "≥ 1"),
        ("NMI(LAM codes, true actions), geometric", opt(m.nmi), demo_target("≥ 0.5")),
        ("NMI, arithmetic", opt(m.nmi_arithmetic), ""),
    ]
}

/// Print the metrics as a table with their targets ([`summary_rows`]), the LAM's code/action
/// counts, the object table of a built-in game and the per-frame figures.
pub fn print_table(m: &WorldMetrics) {
    println!("world model on {} clips ({} context + {} generated frames)", m.clips, m.context, m.frames);
    println!("  {:<38} {:>9}  target", "metric", "value");
    let rows = summary_rows(m);
    for (name, value, target) in rows {
        println!("  {name:<38} {value:>9}  {target}");
    }
    if let Some(counts) = &m.code_action_counts {
        println!("  transitions per LAM code (rows) and recorded action (columns):");
        let actions = counts.first().map_or(0, Vec::len);
        let serves = m.code_serve_counts.as_ref();
        let mut header: Vec<String> = (0..actions).map(|a| format!("{:>6}", format!("a{a}"))).collect();
        if serves.is_some() {
            header.push(format!("{:>8}", "serves"));
        }
        println!("  {:>5} {}", "code", header.join(""));
        for (code, row) in counts.iter().enumerate() {
            let mut cells: Vec<String> = row.iter().map(|n| format!("{n:>6}")).collect();
            if let Some(serves) = serves {
                cells.push(format!("{:>8}", serves.get(code).copied().unwrap_or(0)));
            }
            println!("  {code:>5} {}", cells.join(""));
        }
        if serves.is_some() {
            println!("  (serves: transitions whose frames show the ball launched from the paddle)");
        }
    }
    if let Some(o) = &m.objects {
        print_object_table(o);
    }
    let objects = m.objects.as_ref().map(|o| &o.rollout.per_frame);
    let ball = |i: usize| objects.map_or(String::new(), |f| fmt_share(f[i].ball_recall));
    let ball_err = |i: usize| objects.map_or(String::new(), |f| fmt_px(f[i].ball_error_median));
    let header =
        if objects.is_some() { format!(" {:>11} {:>9}", "ball recall", "ball err") } else { String::new() };
    println!("  {:>5} {:>12} {:>12} {:>9}{header}", "frame", "rollout PSNR", "rollout SSIM", "ΔPSNR");
    for i in 0..m.frames {
        let extra =
            if objects.is_some() { format!(" {:>11} {:>9}", ball(i), ball_err(i)) } else { String::new() };
        println!(
            "  {:>5} {:>12.2} {:>12.4} {:>9.2}{extra}",
            m.context + i,
            m.rollout_psnr_per_frame[i],
            m.rollout_ssim_per_frame[i],
            m.delta_psnr_per_frame[i]
        );
    }
}

/// A share with two decimals, or `n/a`.
fn fmt_share(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.2}"))
}

/// A pixel distance with one decimal, or `n/a`.
fn fmt_px(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.1}"))
}

/// The object table: one row per kind of generated frames, the game's columns.
pub fn print_object_table(o: &WorldObjectMetrics) {
    let rows: [(&str, &ObjectScores); 5] = [
        ("model rollout", &o.rollout.overall),
        ("random actions", &o.random_actions.overall),
        ("next frame (one step)", &o.next_frame.overall),
        ("copy last context frame", &o.copy_last_frame.overall),
        ("tokenizer reconstruction", &o.reconstruction.overall),
    ];
    println!("  objects ({}, read off the frames by the same detector as the ground truth):", o.game);
    if print_object_rows(&o.game, &rows) {
        println!(
            "  targets: ball recall ≥ 0.9, hallucination ≤ 0.05, ball error median ≤ 3 px and p90 ≤ 8 px,"
        );
        println!("  paddle error median ≤ 1 px; errors in px of the frame, brick error in bricks");
    }
    if let Some(spread) = &o.rollout.clip_spread {
        print_clip_spread(spread);
    }
    print_ball_by_event(&o.rollout.by_first_event, o.rollout.without_serves.as_ref());
}

/// One row of object scores per kind of frames, with the columns of `game` (`"maze"`, else
/// breakout's); true when the columns are breakout's.
pub fn print_object_rows(game: &str, rows: &[(&str, &ObjectScores)]) -> bool {
    if game == "maze" {
        println!("  {:<26} {:>13} {:>10} {:>11}", "", "displacement", "coin err", "off-palette");
        println!("  {:<26} {:>13} {:>10} {:>11}", "", "wrong", "(mean)", "share");
        for &(name, r) in rows {
            println!(
                "  {name:<26} {:>13} {:>10} {:>11.4}",
                fmt_share(r.displacement_error),
                fmt_px(r.coin_error_mean),
                r.off_palette_share
            );
        }
        return false;
    }
    println!(
        "  {:<26} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7} {:>11}",
        "", "ball", "ball", "ball err", "ball err", "paddle", "brick", "off-palette"
    );
    println!(
        "  {:<26} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7} {:>11}",
        "", "recall", "halluc.", "median", "p90", "err med", "err", "share"
    );
    for &(name, r) in rows {
        println!(
            "  {name:<26} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7} {:>11.4}",
            fmt_share(r.ball_recall),
            fmt_share(r.ball_hallucination),
            fmt_px(r.ball_error_median),
            fmt_px(r.ball_error_p90),
            fmt_px(r.paddle_error_median),
            fmt_px(r.brick_error_mean),
            r.off_palette_share
        );
    }
    true
}

/// How far the model rollout's ball scores would move with another draw of clips.
fn print_clip_spread(s: &ClipSpread) {
    let range = |v: Option<[f64; 2]>, fmt: fn(Option<f64>) -> String| {
        v.map_or("n/a".to_string(), |[lo, hi]| format!("{}–{}", fmt(Some(lo)), fmt(Some(hi))))
    };
    println!(
        "  model rollout, its {} clips redrawn {} times (bootstrap): {:.0} % of the draws score",
        s.clips,
        s.draws,
        100.0 * INTERVAL
    );
    println!(
        "    ball recall {}, ball err median {} px, p90 {} px",
        range(s.ball_recall, fmt_share),
        range(s.ball_error_median, fmt_px),
        range(s.ball_error_p90, fmt_px)
    );
}

/// The model rollout's ball scores by what the true ball did first after the context.
fn print_ball_by_event(groups: &[EventScores], without_serves: Option<&ObjectScores>) {
    if groups.is_empty() {
        return;
    }
    println!("  model rollout's ball, from what the true ball did first after the context on:");
    println!("  {:<26} {:>7} {:>7} {:>9} {:>8}", "", "frames", "recall", "err med", "err p90");
    let rows = groups.iter().map(|g| (g.event.map_or("kept its course", |e| e.label()), &g.scores));
    for (name, r) in rows.chain(without_serves.map(|r| ("all but serve frames", r))) {
        println!(
            "  {name:<26} {:>7} {:>7} {:>9} {:>8}",
            r.frames,
            fmt_share(r.ball_recall),
            fmt_px(r.ball_error_median),
            fmt_px(r.ball_error_p90)
        );
    }
    println!("  (frames from a serve on count as serve frames: a serve starts the ball's course afresh)");
}

#[cfg(test)]
mod tests {
    use super::summary_rows;
    use jinn_world::world_eval::WorldMetrics;

    /// Metrics of `frames` generated frames with no object scores (data of no built-in game).
    fn metrics_without_a_game(frames: usize) -> WorldMetrics {
        let per_frame = vec![20.0; frames];
        WorldMetrics {
            clips: 4,
            context: 2,
            frames,
            next_frame_psnr: 21.0,
            next_frame_ssim: 0.6,
            next_frame_psnr_per_frame: per_frame.clone(),
            rollout_psnr: 17.0,
            rollout_ssim: 0.5,
            rollout_psnr_per_frame: per_frame.clone(),
            rollout_ssim_per_frame: vec![0.5; frames],
            random_action_psnr: 15.0,
            random_action_ssim: 0.4,
            copy_last_frame_psnr: 16.0,
            copy_last_frame_ssim: 0.45,
            delta_psnr: 2.0,
            delta_psnr_per_frame: per_frame,
            nmi: Some(0.01),
            nmi_arithmetic: Some(0.01),
            nmi_transitions: 100,
            code_action_counts: None,
            code_serve_counts: None,
            objects: None,
        }
    }

    #[test]
    fn data_of_no_built_in_game_gets_the_general_targets_only() {
        let rows = summary_rows(&metrics_without_a_game(3));
        let target = |name: &str| rows.iter().find(|r| r.0.starts_with(name)).map(|r| r.2).unwrap();
        assert_eq!(target("rollout PSNR (dB, LAM"), "");
        assert_eq!(target("NMI(LAM codes"), "");
        assert_eq!(target("PSNR (dB, copy last"), "< rollout");
        assert_eq!(target("controllability"), "≥ 1");
        assert_eq!(rows[2].1, "17.00");
    }
}
