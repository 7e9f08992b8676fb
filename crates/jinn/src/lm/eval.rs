//! `jinn lm eval`: loss (nats per token) and bits per byte of a trained run on its held-out
//! documents or on any text file.

use super::train::shard_dir;
use crate::device::DeviceArgs;
use anyhow::Context;
use jinn_text::lm::data::{read_corpus, ShardInfo};
use jinn_text::lm::{bits_per_byte, stream_loss, LmData, TrainedLm};
use jinn_train::checkpoint::MANIFEST_FILE;
use std::path::{Path, PathBuf};

/// Arguments of `jinn lm eval`.
#[derive(clap::Args)]
pub struct LmEvalArgs {
    /// Run directory (its newest good checkpoint) or one `step_*` checkpoint directory.
    #[arg(long)]
    pub ckpt: PathBuf,
    /// A UTF-8 text file (or directory of .txt files) to evaluate instead of the run's
    /// held-out documents.
    #[arg(long)]
    pub text: Option<PathBuf>,
    /// Windows per forward pass.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The run directory of `ckpt` (itself, or the parent of a `step_*` checkpoint).
fn run_dir(ckpt: &Path) -> PathBuf {
    match ckpt.parent() {
        Some(parent) if ckpt.join(MANIFEST_FILE).exists() => parent.to_path_buf(),
        _ => ckpt.to_path_buf(),
    }
}

/// Print the loss and bits per byte.
pub fn run(a: LmEvalArgs) -> anyhow::Result<()> {
    let trained = TrainedLm::load(&a.ckpt, &a.device.device())
        .with_context(|| format!("loading a language model from {}", a.ckpt.display()))?;
    let (tokens, info, what) = match &a.text {
        Some(path) => {
            let docs = read_corpus(path).with_context(|| format!("--text {}", path.display()))?;
            let text: String = docs.iter().map(|d| d.text.as_str()).collect();
            let tokens = trained.tokenizer.encode(&text);
            let info = ShardInfo { docs: vec![], tokens: tokens.len() as u64, bytes: text.len() as u64 };
            (tokens, info, path.display().to_string())
        }
        None => {
            let dir = shard_dir(&run_dir(&a.ckpt));
            let data = LmData::load(&dir).with_context(|| {
                format!("reading the run's held-out shard in {} (or pass --text FILE)", dir.display())
            })?;
            let what = format!("held-out {}", data.meta.val.docs.join(", "));
            (data.val, data.meta.val, what)
        }
    };
    let seq = trained.model.max_seq;
    if tokens.len() <= seq {
        anyhow::bail!("{what} has {} tokens; evaluation needs more than model.max_seq = {seq}", tokens.len());
    }
    let (loss, predicted) = stream_loss(&trained.model, &tokens, a.batch);
    println!(
        "{} ({:?}, step {}) on {what}: {predicted} tokens, loss {loss:.4} nats/token, {:.4} bits/byte",
        a.ckpt.display(),
        trained.model.arch(),
        trained.step,
        bits_per_byte(loss, &info)
    );
    Ok(())
}
