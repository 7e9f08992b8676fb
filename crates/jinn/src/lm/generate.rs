//! `jinn lm generate`: sample text after a prompt with KV-cached decoding, printing tokens as
//! they come.

use crate::device::DeviceArgs;
use anyhow::Context;
use jinn_text::lm::{generate, Sampling, TrainedLm, Utf8Stream};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `jinn lm generate`.
#[derive(clap::Args)]
pub struct LmGenerateArgs {
    /// Run directory (its newest good checkpoint) or one `step_*` checkpoint directory.
    #[arg(long)]
    pub ckpt: PathBuf,
    /// The text to continue.
    #[arg(long)]
    pub prompt: String,
    /// Tokens to generate (prompt plus these must fit in model.max_seq).
    #[arg(long, default_value_t = 200)]
    pub max_tokens: usize,
    /// Softmax temperature; 0 = greedy.
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f64,
    /// Sample among the k most likely tokens only; 0 = all.
    #[arg(long, default_value_t = 40)]
    pub top_k: usize,
    /// Sampling seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Compute device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Print the prompt and its continuation, then the generation speed on stderr.
pub fn run(a: LmGenerateArgs) -> anyhow::Result<()> {
    let trained = TrainedLm::load(&a.ckpt, &a.device.device())
        .with_context(|| format!("loading a language model from {}", a.ckpt.display()))?;
    let prompt = trained.tokenizer.encode(&a.prompt);
    let sampling = Sampling { temperature: a.temperature, top_k: a.top_k };
    let mut rng = jinn_data::rng::rng_for(a.seed, "lm-generate", 0);
    let mut out = std::io::stdout().lock();
    write!(out, "{}", a.prompt)?;
    // Bytes of a multi-byte character may arrive in separate tokens: print whole characters.
    let mut text = Utf8Stream::default();
    let mut failure: Option<anyhow::Error> = None;
    let t = Instant::now();
    let tokens = generate(&trained.model, &prompt, a.max_tokens, sampling, &mut rng, |id| {
        match trained.tokenizer.decode_bytes(&[id]) {
            Ok(bytes) => {
                let _ = write!(out, "{}", text.push(&bytes));
                let _ = out.flush();
                true
            }
            Err(e) => {
                failure = Some(e.into());
                false
            }
        }
    })
    .map_err(|e| anyhow::anyhow!("--prompt / --max-tokens / --temperature: {e}"))?;
    if let Some(e) = failure {
        return Err(e);
    }
    writeln!(out, "{}", text.finish())?;
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "{} tokens in {secs:.2} s ({:.1} tokens/s)",
        tokens.len(),
        tokens.len() as f64 / secs.max(1e-9)
    );
    Ok(())
}
