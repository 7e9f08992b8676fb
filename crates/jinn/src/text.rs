//! `jinn text …`: train the MGT tokenizer, encode, decode and segment.

use anyhow::{bail, Context};
use jinn_text::tokenizer::{AffixSet, MorphConfig, Tokenizer, TrainConfig};
use std::path::{Path, PathBuf};

/// Text commands.
#[derive(clap::Subcommand)]
pub enum TextCommand {
    /// Train an MGT tokenizer (morph segmentation + BPE within morphs) on text files.
    TrainTokenizer(TrainTokenizerArgs),
    /// Encode text to token ids (printed space-separated).
    Encode(EncodeArgs),
    /// Decode token ids to text.
    Decode(DecodeArgs),
    /// Show the morphs of words.
    Segment(SegmentArgs),
}

/// Arguments of `jinn text train-tokenizer`.
#[derive(clap::Args)]
pub struct TrainTokenizerArgs {
    /// Text files or directories (read recursively; every file must be UTF-8).
    #[arg(long, num_args = 1.., required = true)]
    pub corpus: Vec<PathBuf>,
    /// Vocabulary size (specials + anchors + 256 bytes + merges).
    #[arg(long, default_value_t = 8000)]
    pub vocab: usize,
    /// Reserved anchor tokens.
    #[arg(long, default_value_t = 16)]
    pub anchors: usize,
    /// hunspell .aff files whose PFX/SFX rules fix morph boundaries where they apply (repeatable).
    #[arg(long)]
    pub aff: Vec<PathBuf>,
    /// Plain BPE over pieces: no morph segmentation (the baseline).
    #[arg(long)]
    pub plain: bool,
    /// Output tokenizer JSON.
    #[arg(long)]
    pub out: PathBuf,
}

/// Arguments of `jinn text encode`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// Tokenizer JSON.
    #[arg(long)]
    pub tok: PathBuf,
    /// Text to encode.
    #[arg(long, conflicts_with = "file", required_unless_present = "file")]
    pub text: Option<String>,
    /// File to encode.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Prepend <bos>.
    #[arg(long)]
    pub bos: bool,
    /// Append <eos>.
    #[arg(long)]
    pub eos: bool,
}

/// Arguments of `jinn text decode`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// Tokenizer JSON.
    #[arg(long)]
    pub tok: PathBuf,
    /// Token ids.
    #[arg(required = true)]
    pub ids: Vec<u32>,
}

/// Arguments of `jinn text segment`.
#[derive(clap::Args)]
pub struct SegmentArgs {
    /// Tokenizer JSON.
    #[arg(long)]
    pub tok: PathBuf,
    /// Words to segment.
    #[arg(required = true)]
    pub words: Vec<String>,
}

/// Run a text command.
pub fn run(cmd: TextCommand) -> anyhow::Result<()> {
    match cmd {
        TextCommand::TrainTokenizer(a) => train(a),
        TextCommand::Encode(a) => {
            let tok = load(&a.tok)?;
            let text = match (&a.text, &a.file) {
                (Some(t), _) => t.clone(),
                (None, Some(f)) => {
                    std::fs::read_to_string(f).with_context(|| format!("reading --file {}", f.display()))?
                }
                (None, None) => bail!("give --text or --file"),
            };
            let ids = tok.encode_with_specials(&text, a.bos, a.eos);
            println!("{}", ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" "));
            Ok(())
        }
        TextCommand::Decode(a) => {
            let tok = load(&a.tok)?;
            print!("{}", tok.decode(&a.ids).context("decoding the ids")?);
            Ok(())
        }
        TextCommand::Segment(a) => {
            let tok = load(&a.tok)?;
            for w in &a.words {
                let tokens: Vec<String> = tok
                    .encode(w)
                    .iter()
                    .map(|&id| String::from_utf8_lossy(tok.token_bytes(id).unwrap_or_default()).into_owned())
                    .collect();
                println!("{w}\tmorphs: {}\ttokens: {}", tok.segment(w).join(" | "), tokens.join(" | "));
            }
            Ok(())
        }
    }
}

fn load(path: &Path) -> anyhow::Result<Tokenizer> {
    Tokenizer::load(path).with_context(|| format!("loading tokenizer --tok {}", path.display()))
}

fn train(a: TrainTokenizerArgs) -> anyhow::Result<()> {
    let docs = read_corpus(&a.corpus)?;
    let mut affixes = AffixSet::default();
    for f in &a.aff {
        affixes.rules.extend(AffixSet::load(f).with_context(|| format!("--aff {}", f.display()))?.rules);
    }
    let cfg = TrainConfig {
        vocab_size: a.vocab,
        anchors: a.anchors,
        morph: (!a.plain).then(MorphConfig::default),
        affixes,
        // --plain is classic BPE: every merge a vocabulary token.
        merges_per_slot: if a.plain { 1.0 } else { TrainConfig::default().merges_per_slot },
        ..TrainConfig::default()
    };
    let start = std::time::Instant::now();
    let tok = Tokenizer::train(&docs, &cfg).context("training the tokenizer (--corpus, --vocab)")?;
    tok.save(&a.out).with_context(|| format!("writing --out {}", a.out.display()))?;
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    println!(
        "trained on {} files ({bytes} bytes) in {:.1} s: vocab {} ({} BPE merges, {} of them \
         scaffolding left out of the vocabulary; {} morphs) → {}",
        docs.len(),
        start.elapsed().as_secs_f64(),
        tok.vocab_size(),
        tok.merges().len(),
        tok.scaffold_len(),
        tok.morph_lexicon().len(),
        a.out.display()
    );
    Ok(())
}

/// Read every file under the given files/directories (recursively, sorted by path) as UTF-8.
pub fn read_corpus(paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for p in paths {
        collect_files(p, &mut files).with_context(|| format!("--corpus {}", p.display()))?;
    }
    files.sort();
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .with_context(|| format!("reading corpus file {} as UTF-8", f.display()))
        })
        .collect()
}

fn collect_files(p: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let meta = std::fs::metadata(p).with_context(|| format!("{} does not exist", p.display()))?;
    if meta.is_dir() {
        for e in std::fs::read_dir(p)? {
            collect_files(&e?.path(), out)?;
        }
    } else {
        out.push(p.to_path_buf());
    }
    Ok(())
}
