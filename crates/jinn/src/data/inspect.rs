//! `jinn data inspect`: counts, shapes, record lengths, action histogram, how often breakout's
//! ball bounces, breaks bricks and is lost, preview GIF.

use super::{resolve_shape, splits_of, ShapeArg};
use jinn_data::array_record::ArrayRecordReader;
use jinn_data::dataset::{list_record_files, validate_record};
use jinn_data::gif_writer::{write_gif, GifOptions};
use jinn_data::metadata::{action_names, DatasetMetadata};
use jinn_data::objects::{ball_events, detect_breakout, BallEvent, Game, BALL_EVENTS};
use jinn_data::pickle::decode_episode;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Arguments of `jinn data inspect`.
#[derive(clap::Args)]
pub struct InspectArgs {
    /// Dataset root, split directory or single `.array_record` file.
    pub path: PathBuf,
    #[command(flatten)]
    pub shape: ShapeArg,
    /// Where to write the preview GIF (default: `preview.gif` in PATH's directory, or in the
    /// temporary directory when that one is read-only).
    #[arg(long)]
    pub gif: Option<PathBuf>,
    /// Frames in the preview GIF.
    #[arg(long, default_value_t = 64)]
    pub gif_frames: usize,
    /// Decode at most this many records per split for the length/action statistics.
    #[arg(long, default_value_t = 2000)]
    pub max_records: usize,
}

/// Statistics of one split.
#[derive(Default)]
struct SplitSummary {
    files: usize,
    records: u64,
    decoded: usize,
    frames: usize,
    min_len: usize,
    max_len: usize,
    action_shape: Option<(String, usize)>,
    histogram: BTreeMap<i64, usize>,
    /// Breakout only: transitions read, and how many of them carry each ball event.
    ball_events: Option<(usize, BTreeMap<&'static str, usize>)>,
}

/// Count the ball events of a breakout record's transitions (read off its frames) into `tally`.
fn tally_ball_events(
    video: &[u8],
    shape: jinn_data::FrameShape,
    tally: &mut (usize, BTreeMap<&'static str, usize>),
) -> anyhow::Result<()> {
    let track = video
        .chunks_exact(shape.frame_bytes())
        .map(|frame| detect_breakout(frame, shape))
        .collect::<jinn_data::Result<Vec<_>>>()?;
    tally.0 += track.len().saturating_sub(1);
    for event in ball_events(&track, shape).into_iter().flatten() {
        *tally.1.entry(event.label()).or_default() += 1;
    }
    Ok(())
}

/// Inspect a dataset.
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let splits = splits_of(&args.path)?;
    let root = if args.path.is_file() {
        args.path.parent().unwrap_or(&args.path).to_path_buf()
    } else {
        args.path.clone()
    };
    let meta = DatasetMetadata::find(&root).map(|p| DatasetMetadata::load(&p)).transpose()?;
    if let Some(meta) = &meta {
        println!(
            "env: {}  num_actions: {}",
            if meta.env.is_empty() { "-" } else { meta.env.as_str() },
            meta.num_actions.map_or("-".into(), |n| n.to_string())
        );
    }
    let names = meta.as_ref().and_then(|m| action_names(&m.env, m.num_actions)).unwrap_or_default();
    let breakout = meta.as_ref().and_then(|m| Game::from_env_name(&m.env)) == Some(Game::Breakout);
    let mut preview = None;
    for (name, dir) in &splits {
        let shape = resolve_shape(dir, args.shape.frame_shape)?;
        let (_, files) = list_record_files(dir)?;
        let mut s = SplitSummary { files: files.len(), min_len: usize::MAX, ..Default::default() };
        if breakout {
            s.ball_events = Some((0, BTreeMap::new()));
        }
        for file in &files {
            let reader = ArrayRecordReader::open(file)?;
            s.records += reader.len();
            for i in 0..reader.len() {
                if s.decoded >= args.max_records {
                    break;
                }
                let record = decode_episode(&reader.read(i)?)
                    .map_err(|e| anyhow::anyhow!("{}: record {i}: {e}", file.display()))?;
                s.decoded += 1;
                s.frames += record.sequence_length;
                s.min_len = s.min_len.min(record.sequence_length);
                s.max_len = s.max_len.max(record.sequence_length);
                if let Some(a) = &record.actions {
                    s.action_shape = Some((a.dtype.numpy_name().to_string(), a.per_step()));
                    for &v in &a.values {
                        *s.histogram.entry(v).or_default() += 1;
                    }
                }
                if preview.is_none() || s.ball_events.is_some() {
                    validate_record(&record, shape)
                        .map_err(|e| anyhow::anyhow!("{}: record {i}: {e}", file.display()))?;
                }
                if let Some(tally) = &mut s.ball_events {
                    tally_ball_events(&record.raw_video, shape, tally)
                        .map_err(|e| anyhow::anyhow!("{}: record {i}: {e}", file.display()))?;
                }
                if preview.is_none() {
                    preview = Some((record, shape));
                }
            }
        }
        print_summary(name, &s, shape, &names);
    }
    if let Some((record, shape)) = preview {
        let frames = record.sequence_length.min(args.gif_frames.max(1));
        let options = GifOptions { scale: 4, ..GifOptions::default() };
        let video = &record.raw_video[..frames * shape.frame_bytes()];
        let path = match args.gif {
            Some(path) => write_gif(&path, video, shape, &options).map(|()| path)?,
            // A read-only dataset directory: the temporary directory instead.
            None => write_gif(&root.join("preview.gif"), video, shape, &options)
                .map(|()| root.join("preview.gif"))
                .or_else(|_| {
                    let tmp = std::env::temp_dir().join("jinn-preview.gif");
                    write_gif(&tmp, video, shape, &options).map(|()| tmp)
                })?,
        };
        println!("preview: {} ({frames} frames of the first record)", path.display());
    }
    Ok(())
}

fn print_summary(name: &str, s: &SplitSummary, shape: jinn_data::FrameShape, names: &[String]) {
    print_counts(name, s, shape, names);
    if let Some((transitions, counts)) = &s.ball_events {
        let share = |e: BallEvent| {
            100.0 * counts.get(e.label()).copied().unwrap_or(0) as f64 / (*transitions).max(1) as f64
        };
        let shares: Vec<String> =
            BALL_EVENTS.iter().map(|&e| format!("{} {:.1}%", e.label(), share(e))).collect();
        println!("  ball events (read off the frames) in {transitions} transitions: {}", shares.join(", "));
    }
}

fn print_counts(name: &str, s: &SplitSummary, shape: jinn_data::FrameShape, names: &[String]) {
    let partial = if (s.decoded as u64) < s.records {
        format!(" (stats over the first {})", s.decoded)
    } else {
        String::new()
    };
    println!(
        "{name}: {} file(s), {} records{partial}, frame {}x{}x{}",
        s.files, s.records, shape.height, shape.width, shape.channels
    );
    if s.decoded > 0 {
        println!(
            "  frames {}  record length min {} / mean {:.1} / max {}",
            s.frames,
            s.min_len,
            s.frames as f64 / s.decoded as f64,
            s.max_len
        );
    }
    match &s.action_shape {
        None => println!("  actions: none"),
        Some((dtype, k)) => {
            let total: usize = s.histogram.values().sum();
            println!("  actions: {dtype}, {k} per step; histogram:");
            for (value, count) in &s.histogram {
                let share = *count as f64 / total.max(1) as f64;
                let label =
                    usize::try_from(*value).ok().and_then(|v| names.get(v)).map_or("", |n| n.as_str());
                println!(
                    "    {value:>4} {label:<10}: {count:>9} {:5.1}% {}",
                    share * 100.0,
                    "#".repeat((share * 50.0).round() as usize)
                );
            }
        }
    }
}
