//! `jinn demo`: from nothing to a playable world model — generate breakout episodes, train the
//! tokenizer, the LAM and MaskGIT dynamics with the built-in demo configs, sample a rollout GIF,
//! and score the model with `jinn eval world` (rollout PSNR, ΔPSNR, NMI).
//!
//! Every stage is an ordinary `jinn train …` run in `DIR/<stage>` (the same code path as the
//! CLI). A stage is finished when its run holds a checkpoint at its final step; a second
//! `jinn demo` skips finished stages and resumes a half-finished one.

use crate::device::DeviceArgs;
use crate::eval::world::{evaluate_world, print_table, EvalWorldArgs, DEFAULT_NMI_CLIPS};
use crate::sample::{sample_rollout, SampleArgs};
use crate::sampler_args::SamplerArgs;
use crate::train::{self, TrainCommand};
use anyhow::{bail, Context};
use clap::Parser;
use jinn_data::atomic_file::write_atomically;
use jinn_data::generate::{generate_dataset, GenerateConfig};
use jinn_train::checkpoint::list_steps;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The demo configs, embedded so `jinn demo` works from any directory.
const TOKENIZER_TOML: &str = include_str!("../../../configs/demo/tokenizer.toml");
const LAM_TOML: &str = include_str!("../../../configs/demo/lam.toml");
/// The demo dynamics config (also the model size of `jinn bench sample`).
pub(crate) const DYNAMICS_TOML: &str = include_str!("../../../configs/demo/dynamics.toml");

/// Arguments of `jinn demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Demo directory: data/, configs/, tokenizer/, lam/, dynamics/, sample/, eval/.
    #[arg(long, default_value = "jinn-demo")]
    pub out: PathBuf,
    /// Use this dataset (with train/ and val/) instead of generating breakout into DIR/data.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Breakout episodes to generate (when DIR/data does not exist yet).
    #[arg(long, default_value_t = 200)]
    pub episodes: usize,
    /// Training steps of every stage (for quick tries; warm-up and decay shrink to fit).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Override a stage's config: `STAGE:KEY=VALUE` with STAGE tokenizer, lam, dynamics or all,
    /// e.g. `--set dynamics:train.steps=800` (repeatable).
    #[arg(long = "set", value_name = "STAGE:KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Frames generated after the context frames.
    #[arg(long, default_value_t = 15)]
    pub frames: usize,
    /// Validation clips scored by the final `jinn eval world` (0 skips it).
    #[arg(long, default_value_t = 16)]
    pub eval_episodes: usize,
    /// Compute device of every stage, the rollout and the evaluation.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// One training stage.
struct Stage {
    name: &'static str,
    toml: &'static str,
    /// Extra `jinn train` flags besides config/data/out/set.
    extra: Vec<String>,
}

/// Parses a `jinn train` command line (so the demo runs exactly what the CLI would).
#[derive(Parser)]
#[command(name = "jinn train")]
struct TrainCli {
    #[command(subcommand)]
    command: TrainCommand,
}

/// Run the demo.
pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let overrides = parse_overrides(&a.overrides)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let data = match &a.data {
        Some(d) => d.clone(),
        None => {
            let d = a.out.join("data");
            ensure_data(&d, a.episodes)?;
            d
        }
    };
    let dir = |s: &str| a.out.join(s).display().to_string();
    let stages = [
        Stage { name: "tokenizer", toml: TOKENIZER_TOML, extra: vec![] },
        Stage { name: "lam", toml: LAM_TOML, extra: vec![] },
        Stage {
            name: "dynamics",
            toml: DYNAMICS_TOML,
            extra: vec![
                "--tokenizer".into(),
                dir("tokenizer"),
                "--lam".into(),
                dir("lam"),
                "--kind".into(),
                "maskgit".into(),
            ],
        },
    ];
    for (i, stage) in stages.iter().enumerate() {
        println!("[{}/6] {}", i + 2, stage.name);
        let t = Instant::now();
        let sets: Vec<String> = stage_overrides(stage.name, &overrides, a.steps);
        run_stage(stage, &a.out, &data, &sets, a.device)?;
        println!("      {} done in {:.0} s", stage.name, t.elapsed().as_secs_f64());
    }

    println!("[5/6] sampling a rollout ({DEMO_CONTEXT} context frames, {} generated, LAM actions)", a.frames);
    let sample_args = SampleArgs {
        ckpt: a.out.join("dynamics"),
        data: data.clone(),
        split: "val".into(),
        context: DEMO_CONTEXT,
        frames: a.frames,
        actions: "lam".into(),
        sampler: SamplerArgs::demo(),
        seed: 0,
        out: a.out.join("sample"),
        device: a.device,
    };
    let report = sample_rollout(&sample_args)?;
    println!(
        "rollout: mean PSNR {:.2} dB, mean SSIM {:.4}, {:.1} frames/s (metrics in {})",
        report.mean_psnr,
        report.mean_ssim,
        report.frames_per_s,
        a.out.join("sample/metrics.json").display()
    );
    if a.eval_episodes > 0 {
        println!("[6/6] evaluating the world model on {} val clips (jinn eval world)", a.eval_episodes);
        let eval_args = EvalWorldArgs {
            ckpt: a.out.join("dynamics"),
            compare: Vec::new(),
            data: data.clone(),
            split: "val".into(),
            episodes: a.eval_episodes,
            nmi_clips: DEFAULT_NMI_CLIPS,
            batch_size: 4,
            context: DEMO_CONTEXT,
            frames: a.frames,
            sampler: SamplerArgs::demo(),
            seed: 0,
            out: a.out.join("eval"),
            device: a.device,
        };
        let (metrics, _) = evaluate_world(&eval_args)?;
        print_table(&metrics);
        println!("      metrics in {}", a.out.join("eval/metrics.json").display());
    }
    println!("demo finished in {:.0} s", started.elapsed().as_secs_f64());
    println!("GIF (ground truth | generated): {}", report.gif.display());
    println!("play it: jinn play --ckpt {} --data {}", a.out.join("dynamics").display(), data.display());
    Ok(())
}

/// True frames a demo rollout starts from: two, so that the ball's velocity is defined (from
/// one frame the model cannot tell where the ball goes).
const DEMO_CONTEXT: usize = 2;

/// Share of the demo data's steps played by breakout's ball-following player (`jinn data gen
/// --follow-prob`): random play loses the ball within a few bounces, and a world trained on
/// it seldom sees the ball bounce off the paddle, so in play it loses the ball there. Half the
/// steps following the ball give 3.8 % paddle bounces and 3.6 % brick hits per transition
/// (random play: 1.0 % and 2.8 %); see docs/evaluating-worlds.md for what it does to play.
const DEMO_FOLLOW_PROB: f64 = 0.5;

/// Generate built-in breakout episodes into `dir` unless a dataset is already there.
fn ensure_data(dir: &Path, episodes: usize) -> anyhow::Result<()> {
    if dir.join("metadata.json").is_file() {
        println!("[1/6] data: reusing {}", dir.display());
        return Ok(());
    }
    println!(
        "[1/6] data: generating {episodes} breakout episodes into {} (half the steps following the ball)",
        dir.display()
    );
    let cfg = GenerateConfig {
        episodes,
        follow_prob: DEMO_FOLLOW_PROB,
        overwrite: true,
        ..GenerateConfig::default()
    };
    let progress = crate::progress::Progress::new(episodes as u64, "episodes");
    generate_dataset(&cfg, dir, &mut |p| progress.set(p.episodes_done as u64, p.split))
        .with_context(|| format!("generating breakout episodes into {}", dir.display()))?;
    progress.finish();
    Ok(())
}

/// `(stage, KEY=VALUE)` pairs from `STAGE:KEY=VALUE` flags.
fn parse_overrides(raw: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    raw.iter()
        .map(|spec| {
            let Some((stage, kv)) = spec.split_once(':') else {
                bail!("--set {spec}: expected STAGE:KEY=VALUE (STAGE tokenizer, lam, dynamics or all)");
            };
            if !["tokenizer", "lam", "dynamics", "all"].contains(&stage) {
                bail!("--set {spec}: unknown stage `{stage}`; expected tokenizer, lam, dynamics or all");
            }
            if !kv.contains('=') {
                bail!("--set {spec}: expected KEY=VALUE after `{stage}:`");
            }
            Ok((stage.to_string(), kv.to_string()))
        })
        .collect()
}

/// The `--set` values for `stage`: `--steps` first (with the LR warm-up/decay shrunk to fit),
/// then the matching `STAGE:` and `all:` overrides in command-line order.
fn stage_overrides(stage: &str, overrides: &[(String, String)], steps: Option<u64>) -> Vec<String> {
    let mut sets = Vec::new();
    if let Some(n) = steps {
        sets.push(format!("train.steps={n}"));
        sets.push(format!("train.lr.warmup_steps={}", n / 10));
        sets.push(format!("train.lr.decay_steps={}", n / 4));
    }
    sets.extend(overrides.iter().filter(|(s, _)| s == stage || s == "all").map(|(_, kv)| kv.clone()));
    sets
}

/// Train one stage unless its run already holds a checkpoint at its final step.
fn run_stage(
    stage: &Stage,
    out: &Path,
    data: &Path,
    sets: &[String],
    device: DeviceArgs,
) -> anyhow::Result<()> {
    let config = out.join("configs").join(format!("{}.toml", stage.name));
    std::fs::create_dir_all(out.join("configs"))
        .with_context(|| format!("creating {}/configs", out.display()))?;
    write_atomically(&config, stage.toml.as_bytes())?;
    let steps = crate::tasks::load_config(stage.name, Some(&config), sets)?.train().steps;
    let run_dir = out.join(stage.name);
    let done = if run_dir.exists() { list_steps(&run_dir)? } else { Vec::new() };
    if done.contains(&steps) {
        println!("      reusing {} (checkpoint at its final step {steps})", run_dir.display());
        return Ok(());
    }
    let mut argv: Vec<String> = vec![
        "jinn train".into(),
        stage.name.into(),
        "--config".into(),
        config.display().to_string(),
        "--data".into(),
        data.display().to_string(),
        "--out".into(),
        run_dir.display().to_string(),
        "--device".into(),
        device.to_string(),
    ];
    argv.extend(stage.extra.iter().cloned());
    for kv in sets {
        argv.extend(["--set".to_string(), kv.clone()]);
    }
    if let Some(last) = done.last() {
        println!("      resuming {} from step {last} of {steps}", run_dir.display());
        argv.push("--resume".into());
    } else {
        println!("      training {steps} steps into {}", run_dir.display());
    }
    println!(
        "      $ jinn {}",
        argv[1..].join(" ").replacen(stage.name, &format!("train {}", stage.name), 1)
    );
    let cli = TrainCli::try_parse_from(&argv).context("building the stage's `jinn train` command")?;
    let resuming = !done.is_empty();
    train::run(cli.command).with_context(|| {
        let hint = if resuming {
            "; it was resumed, and a run started with another config (e.g. by an older jinn) cannot \
             resume: delete that directory, or pass another --out, to train the stage afresh"
        } else {
            ""
        };
        format!("demo stage `{}` ({}){hint}", stage.name, run_dir.display())
    })
}
