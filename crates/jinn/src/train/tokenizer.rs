//! `jinn train tokenizer`: the VQ-VAE tokenizer, or with `--kind mae` the MAE tokenizer of the
//! diffusion baseline, on a jinn dataset.

use super::run_args::RunArgs;
use jinn_world::TokenizerKind;

/// Arguments of `jinn train tokenizer`.
#[derive(clap::Args)]
pub struct TokenizerArgs {
    /// Config, data, run directory, loop and device flags.
    #[command(flatten)]
    pub run: RunArgs,
    /// `vq` or `mae` (overrides `model.kind`; stored in the checkpoint's config).
    #[arg(long)]
    pub kind: Option<TokenizerKind>,
}

/// Train, then print the step count, the time per step and the last metrics.
pub fn run(TokenizerArgs { mut run, kind }: TokenizerArgs) -> anyhow::Result<()> {
    if let Some(kind) = kind {
        run.overrides.push(format!("model.kind={kind}"));
    }
    super::registered::train("tokenizer", &run, Ok)
}
