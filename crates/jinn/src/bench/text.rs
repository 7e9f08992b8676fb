//! `jinn bench tokenizer`: MGT against plain BPE (same code, no morph constraint) and, with the
//! `hf-baseline` feature, the Hugging Face `tokenizers` BPE, all trained on the same corpus and
//! vocabulary size in the same run: encode throughput (interleaved rounds, best of each),
//! compression (tokens per word and per byte), and morph-boundary F1 against a silver standard
//! from `hunspell -m` analyses: over token boundaries for every tokenizer, and over MGT's morph
//! boundaries (the segmentation its tokens never cross) for the MGT rows. F1 is reported on two
//! samples: word types spread uniformly over the sorted type list (mostly rare words), and
//! running corpus words (types weighted by their frequency).

use anyhow::{bail, Context};
use jinn_text::tokenizer::affixes::{AffixKind, AffixSet};
use jinn_text::tokenizer::morph::Dampening;
use jinn_text::tokenizer::{Encoding, MorphConfig, Tokenizer, TrainConfig};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Arguments of `jinn bench tokenizer`.
#[derive(clap::Args)]
pub struct TokenizerBenchArgs {
    /// Corpus files or directories.
    #[arg(long, default_value = "../shared/data/text/shakespeare")]
    pub corpus: Vec<PathBuf>,
    /// Vocabulary size of every tokenizer.
    #[arg(long, default_value_t = 8000)]
    pub vocab: usize,
    /// hunspell affix file seeding MGT and defining the silver standard.
    #[arg(long, default_value = "/usr/share/hunspell/en_US.aff")]
    pub aff: PathBuf,
    /// hunspell dictionary name for `hunspell -m -d`.
    #[arg(long, default_value = "en_US")]
    pub dict: String,
    /// Words in each boundary-F1 sample (word types; running words).
    #[arg(long, default_value_t = 2000)]
    pub words: usize,
    /// Write both silver samples to this TSV file (for inspection).
    #[arg(long)]
    pub dump_silver: Option<PathBuf>,
    /// Write every sampled word with its silver, MGT morph and MGT token boundaries to this TSV
    /// file (for diagnosing boundary errors).
    #[arg(long)]
    pub dump_words: Option<PathBuf>,
    /// Timed encode rounds (interleaved; best round reported).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Override the morph model's corpus weight α (default: `MorphConfig::default()`).
    #[arg(long)]
    pub corpus_weight: Option<f64>,
    /// Override the morph model's count dampening: none, log or ones.
    #[arg(long, value_parser = parse_dampening)]
    pub dampening: Option<Dampening>,
    /// How silver boundaries are placed: `exact` re-derives the word from hunspell's stem with
    /// the flagged rules (strip, add, condition); `longest-add` (the first bench's heuristic)
    /// cuts the longest `add` of each flag that fits the word's end/start.
    #[arg(long, value_enum, default_value_t = SilverRule::Exact)]
    pub silver: SilverRule,
}

/// How the silver standard turns a `hunspell -m` analysis into boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SilverRule {
    /// Apply the flagged rules to the stem; the boundaries are where the rules' `add`s start.
    Exact,
    /// Cut the longest `add` of each flag that fits (ignores strip and condition).
    LongestAdd,
}

fn parse_dampening(s: &str) -> Result<Dampening, String> {
    match s {
        "none" => Ok(Dampening::None),
        "log" => Ok(Dampening::Log),
        "ones" => Ok(Dampening::Ones),
        _ => Err(format!("expected none, log or ones, got {s:?}")),
    }
}

/// Something that encodes a word-in-context and a document.
trait Subject {
    fn name(&self) -> &str;
    /// Token count of a document.
    fn count(&self, doc: &str) -> usize;
    /// Internal boundaries (byte offsets inside `word`) when encoding `" " + word`.
    fn word_boundaries(&self, word: &str) -> BTreeSet<usize>;
    /// Internal morph boundaries of `word`, for tokenizers that segment into morphs.
    fn morph_boundaries(&self, _word: &str) -> Option<BTreeSet<usize>> {
        None
    }
}

struct Jinn<'a>(&'a str, &'a Tokenizer);

impl Subject for Jinn<'_> {
    fn name(&self) -> &str {
        self.0
    }
    fn count(&self, doc: &str) -> usize {
        self.1.encode(doc).len()
    }
    fn word_boundaries(&self, word: &str) -> BTreeSet<usize> {
        let mut off = 0usize;
        let mut out = BTreeSet::new();
        for id in self.1.encode(&format!(" {word}")) {
            off += self.1.token_bytes(id).map_or(0, |t| t.len());
            if off > 1 && off < word.len() + 1 {
                out.insert(off - 1);
            }
        }
        out
    }
    fn morph_boundaries(&self, word: &str) -> Option<BTreeSet<usize>> {
        self.1.morphs_enabled().then(|| {
            let ends = self.1.morph_lexicon().segment_ends(word);
            ends.into_iter().filter(|&e| e < word.len()).collect()
        })
    }
}

#[cfg(feature = "hf-baseline")]
mod hf {
    use std::collections::BTreeSet;
    use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
    use tokenizers::models::TrainerWrapper;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::AddedToken;

    pub struct Hf(pub tokenizers::Tokenizer);

    /// Byte-level BPE (GPT-2 style pre-tokeniser), `specials` special tokens, trained on `docs`.
    pub fn train(docs: &[String], vocab: usize, specials: &[String]) -> anyhow::Result<Hf> {
        let mut tk = tokenizers::Tokenizer::new(BPE::default());
        tk.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
        tk.with_decoder(Some(tokenizers::decoders::byte_level::ByteLevel::default()));
        let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
            .vocab_size(vocab)
            .min_frequency(0)
            .show_progress(false)
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .special_tokens(specials.iter().map(|s| AddedToken::from(s.clone(), true)).collect())
            .build()
            .into();
        tk.train(&mut trainer, docs.iter()).map_err(|e| anyhow::anyhow!("HF BPE training: {e}"))?;
        Ok(Hf(tk))
    }

    impl super::Subject for Hf {
        fn name(&self) -> &str {
            "HF tokenizers BPE"
        }
        fn count(&self, doc: &str) -> usize {
            self.0.encode_fast(doc, false).expect("HF encode").len()
        }
        fn word_boundaries(&self, word: &str) -> BTreeSet<usize> {
            let enc = self.0.encode(format!(" {word}"), false).expect("HF encode");
            enc.get_offsets()
                .iter()
                .map(|&(_, e)| e)
                .filter(|&e| e > 1 && e < word.len() + 1)
                .map(|e| e - 1)
                .collect()
        }
    }
}

/// Run the benchmark and print its tables.
pub fn run(a: TokenizerBenchArgs) -> anyhow::Result<()> {
    let docs = crate::text::read_corpus(&a.corpus)?;
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    let words: usize = docs.iter().map(|d| d.split_whitespace().count()).sum();
    println!("corpus: {} files, {:.2} MB, {words} words; vocab {}", docs.len(), bytes as f64 / 1e6, a.vocab);
    let affixes = AffixSet::load(&a.aff).with_context(|| format!("--aff {}", a.aff.display()))?;
    let mut morph = MorphConfig::default();
    morph.corpus_weight = a.corpus_weight.unwrap_or(morph.corpus_weight);
    morph.dampening = a.dampening.unwrap_or(morph.dampening);
    println!("morph model: corpus weight {}, dampening {:?}", morph.corpus_weight, morph.dampening);
    let cfg = TrainConfig {
        vocab_size: a.vocab,
        affixes: affixes.clone(),
        morph: Some(morph.clone()),
        ..TrainConfig::default()
    };
    let t = Instant::now();
    let mgt = Tokenizer::train(&docs, &cfg)?;
    let mgt_train = t.elapsed().as_secs_f64();
    let t = Instant::now();
    // Plain BPE: every merge a token (no intermediate-token removal), no morphs.
    let plain = Tokenizer::train(&docs, &TrainConfig { morph: None, merges_per_slot: 1.0, ..cfg.clone() })?;
    let plain_train = t.elapsed().as_secs_f64();
    let unseeded = Tokenizer::train(
        &docs,
        &TrainConfig { affixes: AffixSet::default(), morph: Some(morph), ..cfg.clone() },
    )?;
    let mgt_merges = mgt.clone().with_encoding(Encoding::Merges);
    // The format version 2 MGT: every BPE merge a token, plain fewest-tokens encoding.
    let all_merges = Tokenizer::train(
        &docs,
        &TrainConfig { merges_per_slot: 1.0, encoding: Encoding::FewestTokens, ..cfg.clone() },
    )?;
    #[cfg_attr(not(feature = "hf-baseline"), allow(unused_mut))]
    let mut subjects: Vec<(Box<dyn Subject + '_>, f64)> = vec![
        (Box::new(Jinn("MGT (hunspell-seeded)", &mgt)), mgt_train),
        (Box::new(Jinn("MGT (seeded, merge enc.)", &mgt_merges)), f64::NAN),
        (Box::new(Jinn("MGT (no token removal)", &all_merges)), f64::NAN),
        (Box::new(Jinn("MGT (unseeded)", &unseeded)), f64::NAN),
        (Box::new(Jinn("plain BPE (jinn)", &plain)), plain_train),
    ];
    #[cfg(feature = "hf-baseline")]
    {
        let t = Instant::now();
        let hf = hf::train(&docs, a.vocab, mgt.specials())?;
        subjects.push((Box::new(hf), t.elapsed().as_secs_f64()));
    }
    #[cfg(not(feature = "hf-baseline"))]
    println!("(HF tokenizers baseline not built: rebuild with `--features hf-baseline`)");

    // Throughput: single-threaded, every document, interleaved rounds; best round per subject.
    let mut best = vec![f64::INFINITY; subjects.len()];
    let mut counts = vec![0usize; subjects.len()];
    for _ in 0..a.rounds {
        for (i, (s, _)) in subjects.iter().enumerate() {
            let t = Instant::now();
            counts[i] = docs.iter().map(|d| s.count(d)).sum();
            best[i] = best[i].min(t.elapsed().as_secs_f64());
        }
    }
    let samples = silver_samples(&docs, &affixes, &a.dict, a.words, a.silver)?;
    if let Some(path) = &a.dump_silver {
        write_silver(path, &samples).with_context(|| format!("--dump-silver {}", path.display()))?;
    }
    if let Some(path) = &a.dump_words {
        write_words(path, &samples, &mgt).with_context(|| format!("--dump-words {}", path.display()))?;
    }
    let base_speed = bytes as f64 / best[0];
    for (k, sample) in samples.iter().enumerate() {
        let gold_total: usize = sample.words.iter().map(|w| w.gold.len() * w.weight as usize).sum();
        println!(
            "\nboundary F1 on {} ({} words analysed by `hunspell -m -d {}`, {gold_total} silver boundaries, {:?} rule)",
            sample.label,
            sample.words.iter().map(|w| w.weight as usize).sum::<usize>(),
            a.dict,
            a.silver,
        );
        let speed_header = if k == 0 {
            format!(
                "{:>9} {:>8} {:>10} {:>11} {:>11} ",
                "train s", "MB/s", "MGT speed×", "tokens/word", "tokens/byte"
            )
        } else {
            String::new()
        };
        println!(
            "{:<24} {speed_header}{:>7} {:>7} {:>8} {:>7} {:>7} {:>8}",
            "tokenizer", "tok P", "tok R", "tok F1", "morph P", "morph R", "morph F1"
        );
        for (i, (s, train_s)) in subjects.iter().enumerate() {
            let speed = bytes as f64 / best[i];
            let (p, r, f1) = boundary_prf(&sample.words, |w| s.word_boundaries(w));
            let morph = match s.morph_boundaries("") {
                Some(_) => {
                    let (p, r, f1) =
                        boundary_prf(&sample.words, |w| s.morph_boundaries(w).unwrap_or_default());
                    format!("{p:>7.3} {r:>7.3} {f1:>8.3}")
                }
                None => format!("{:>7} {:>7} {:>8}", "-", "-", "-"),
            };
            let speed_cols = if k == 0 {
                format!(
                    "{:>9.1} {:>8.2} {:>10.2} {:>11.3} {:>11.4} ",
                    train_s,
                    speed / 1e6,
                    base_speed / speed,
                    counts[i] as f64 / words as f64,
                    counts[i] as f64 / bytes as f64,
                )
            } else {
                String::new()
            };
            println!("{:<24} {speed_cols}{p:>7.3} {r:>7.3} {f1:>8.3} {morph}", s.name());
        }
    }
    // Batch encoding (rayon) of MGT, for reference.
    let t = Instant::now();
    let batch = mgt.encode_batch(&docs);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nMGT encode_batch ({} rayon threads): {:.2} MB/s, {} tokens",
        rayon::current_num_threads(),
        bytes as f64 / secs / 1e6,
        batch.iter().map(Vec::len).sum::<usize>()
    );
    Ok(())
}

/// One word of a silver sample: its silver boundaries and how often it counts.
struct SilverWord {
    word: String,
    gold: BTreeSet<usize>,
    /// 1 in the word-type sample; the number of sampled occurrences in the running-word sample.
    weight: u64,
}

/// A labelled silver sample.
struct SilverSample {
    label: &'static str,
    words: Vec<SilverWord>,
}

/// Micro-averaged boundary precision, recall, F1 of `predict` over the silver words (each
/// word's boundaries counted `weight` times).
fn boundary_prf(silver: &[SilverWord], predict: impl Fn(&str) -> BTreeSet<usize>) -> (f64, f64, f64) {
    let (mut tp, mut pred, mut gold) = (0u64, 0u64, 0u64);
    for w in silver {
        let p = predict(&w.word);
        tp += w.weight * p.intersection(&w.gold).count() as u64;
        pred += w.weight * p.len() as u64;
        gold += w.weight * w.gold.len() as u64;
    }
    let p = tp as f64 / pred.max(1) as f64;
    let r = tp as f64 / gold.max(1) as f64;
    (p, r, if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 })
}

/// Whether a corpus word enters the silver samples: lowercase ASCII, at least 4 letters.
fn sampled_shape(w: &str) -> bool {
    w.len() >= 4 && w.bytes().all(|b| b.is_ascii_lowercase())
}

/// The two silver samples: `n` word types evenly spaced in the sorted type list (each counts
/// once: mostly rare words), and every k-th of the running corpus words (`n` in all; a type
/// counts as often as it was drawn, so frequent words weigh by their frequency). Words hunspell
/// does not analyse are dropped from both (see [`silver_boundaries`]).
fn silver_samples(
    docs: &[String],
    affixes: &AffixSet,
    dict: &str,
    n: usize,
    rule: SilverRule,
) -> anyhow::Result<Vec<SilverSample>> {
    let running: Vec<&str> = docs
        .iter()
        .flat_map(|d| d.split(|c: char| !c.is_ascii_alphabetic()))
        .filter(|w| sampled_shape(w))
        .collect();
    let types: BTreeSet<&str> = running.iter().copied().collect();
    let step = (types.len() / n.max(1)).max(1);
    let type_sample: Vec<&str> = types.iter().step_by(step).take(n).copied().collect();
    let step = (running.len() / n.max(1)).max(1);
    let mut drawn: BTreeMap<&str, u64> = BTreeMap::new();
    for w in running.iter().step_by(step).take(n) {
        *drawn.entry(w).or_default() += 1;
    }
    let all: BTreeSet<&str> = type_sample.iter().chain(drawn.keys()).copied().collect();
    let gold = silver_boundaries(&all, affixes, dict, rule)?;
    let keep = |w: &str, weight: u64| {
        gold.get(w).map(|g| SilverWord { word: w.to_string(), gold: g.clone(), weight })
    };
    Ok(vec![
        SilverSample {
            label: "word types (uniform over the sorted type list)",
            words: type_sample.iter().filter_map(|w| keep(w, 1)).collect(),
        },
        SilverSample {
            label: "running words (every k-th corpus word: types weighted by frequency)",
            words: drawn.iter().filter_map(|(w, &c)| keep(w, c)).collect(),
        },
    ])
}

/// Write the samples as TSV (`sample`, `word`, `weight`, silver boundaries comma-separated).
fn write_silver(path: &std::path::Path, samples: &[SilverSample]) -> anyhow::Result<()> {
    let mut out = String::from("sample\tword\tweight\tboundaries\n");
    for (k, s) in samples.iter().enumerate() {
        for w in &s.words {
            let b: Vec<String> = w.gold.iter().map(|b| b.to_string()).collect();
            out += &format!("{}\t{}\t{}\t{}\n", ["types", "running"][k], w.word, w.weight, b.join(","));
        }
    }
    jinn_data::atomic_file::write_atomically(path, out.as_bytes())?;
    Ok(())
}

/// Write each sampled word as TSV: `sample`, `word`, `weight`, then the word cut at its silver
/// boundaries, at MGT's morph boundaries and at MGT's token boundaries (`|` between parts).
fn write_words(path: &std::path::Path, samples: &[SilverSample], mgt: &Tokenizer) -> anyhow::Result<()> {
    let cut = |w: &str, b: &BTreeSet<usize>| {
        let mut out = String::new();
        for (i, ch) in w.char_indices() {
            if b.contains(&i) {
                out.push('|');
            }
            out.push(ch);
        }
        out
    };
    let subject = Jinn("MGT", mgt);
    let mut out = String::from("sample\tword\tweight\tsilver\tmorphs\ttokens\n");
    for (k, s) in samples.iter().enumerate() {
        for w in &s.words {
            let morphs = subject.morph_boundaries(&w.word).unwrap_or_default();
            let tokens = subject.word_boundaries(&w.word);
            out += &format!(
                "{}\t{}\t{}\t{}\t{}\t{}\n",
                ["types", "running"][k],
                w.word,
                w.weight,
                cut(&w.word, &w.gold),
                cut(&w.word, &morphs),
                cut(&w.word, &tokens)
            );
        }
    }
    jinn_data::atomic_file::write_atomically(path, out.as_bytes())?;
    Ok(())
}

/// Silver boundaries of `sample` (lowercase corpus words) from their `hunspell -m` analyses
/// (`st:` stem, `fl:` affix flags); see [`SilverRule`]. The analysis with the most boundaries is
/// kept; a word hunspell knows but leaves unaffixed has no boundary and counts too. Words
/// hunspell does not know are left out, and so (with `exact`) are analyses whose rules do not
/// reproduce the word (the count is printed).
fn silver_boundaries<'w>(
    sample: &BTreeSet<&'w str>,
    affixes: &AffixSet,
    dict: &str,
    rule: SilverRule,
) -> anyhow::Result<BTreeMap<&'w str, BTreeSet<usize>>> {
    let mut child = Command::new("hunspell")
        .args(["-m", "-d", dict])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context(
            "cannot run `hunspell`: the boundary-F1 silver standard needs it \
             (`apt-get install -y hunspell hunspell-en-us`)",
        )?;
    let input = sample.iter().copied().collect::<Vec<_>>().join("\n") + "\n";
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output()?;
    writer.join().expect("writer thread")?;
    if !out.status.success() {
        bail!("hunspell -m -d {dict} failed");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut best: BTreeMap<&str, Option<BTreeSet<usize>>> = BTreeMap::new();
    let flags_of = |kind: AffixKind| -> HashSet<&str> {
        affixes.rules.iter().filter(|r| r.kind == kind).map(|r| r.flag.as_str()).collect()
    };
    let (pfx, sfx) = (flags_of(AffixKind::Prefix), flags_of(AffixKind::Suffix));
    let mut underived = 0usize;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(word) = fields.next() else { continue };
        let Some(&w) = sample.get(word) else { continue };
        let fields: Vec<&str> = fields.collect();
        if !fields.iter().any(|f| f.starts_with("st:")) {
            continue;
        }
        let flags: Vec<&str> = fields.iter().filter_map(|f| f.strip_prefix("fl:")).collect();
        let bounds = match rule {
            SilverRule::Exact => {
                let stem = fields.iter().find_map(|f| f.strip_prefix("st:")).unwrap_or(w);
                match derive(affixes, stem, w, &flags) {
                    Some(b) => b,
                    None => {
                        underived += 1;
                        continue;
                    }
                }
            }
            SilverRule::LongestAdd => longest_add_bounds(affixes, w, &flags, &pfx, &sfx),
        };
        let entry = best.entry(w).or_insert(None);
        if entry.as_ref().is_none_or(|b| bounds.len() > b.len()) {
            *entry = Some(bounds);
        }
    }
    if underived > 0 {
        println!(
            "silver standard: {underived} hunspell analyses not reproducible from their rules were skipped"
        );
    }
    Ok(best.into_iter().filter_map(|(w, b)| b.map(|b| (w, b))).collect())
}

/// Boundaries of `word` when the rules of `flags` turn `stem` into it: suffix flags first, then
/// prefix flags, one rule per flag (the first that reproduces the word, in file order); a
/// suffix boundary sits where its `add` starts, a prefix boundary where its `add` ends.
fn derive(affixes: &AffixSet, stem: &str, word: &str, flags: &[&str]) -> Option<BTreeSet<usize>> {
    let kind_of = |f: &str| affixes.rules.iter().find(|r| r.flag == f).map(|r| r.kind);
    let order: Vec<&str> = [AffixKind::Suffix, AffixKind::Prefix]
        .into_iter()
        .flat_map(|k| flags.iter().copied().filter(move |f| kind_of(f) == Some(k)))
        .collect();
    fn go(
        affixes: &AffixSet,
        current: String,
        bounds: Vec<usize>,
        rest: &[&str],
        word: &str,
    ) -> Option<Vec<usize>> {
        let Some((flag, tail)) = rest.split_first() else {
            return (current == word).then_some(bounds);
        };
        for r in affixes.rules.iter().filter(|r| r.flag == *flag) {
            let Some(next) = r.apply(&current) else { continue };
            let mut b = bounds.clone();
            match r.kind {
                AffixKind::Suffix => {
                    let at = next.len() - r.add.len();
                    b.retain(|&x| x < at);
                    b.push(at);
                }
                AffixKind::Prefix => {
                    let shift = r.add.len() as isize - r.strip.len() as isize;
                    b = b
                        .into_iter()
                        .map(|x| (x as isize + shift) as usize)
                        .filter(|&x| x > r.add.len())
                        .collect();
                    b.push(r.add.len());
                }
            }
            if let Some(found) = go(affixes, next, b, tail, word) {
                return Some(found);
            }
        }
        None
    }
    let bounds = go(affixes, stem.to_string(), Vec::new(), &order, word)?;
    Some(bounds.into_iter().filter(|&b| b > 0 && b < word.len()).collect())
}

/// The first bench's heuristic: cut the longest `add` of each prefix flag at the start and of
/// each suffix flag at the end, ignoring strip and condition.
fn longest_add_bounds(
    affixes: &AffixSet,
    w: &str,
    flags: &[&str],
    pfx: &HashSet<&str>,
    sfx: &HashSet<&str>,
) -> BTreeSet<usize> {
    let mut bounds = BTreeSet::new();
    let (mut start, mut end) = (0usize, w.len());
    for f in flags.iter().filter(|f| pfx.contains(*f)) {
        let add = affixes
            .rules
            .iter()
            .filter(|r| r.kind == AffixKind::Prefix && r.flag == *f && !r.add.is_empty())
            .filter(|r| w[start..end].starts_with(r.add.as_str()))
            .map(|r| r.add.len())
            .max();
        if let Some(l) = add {
            start += l;
            bounds.insert(start);
        }
    }
    for f in flags.iter().rev().filter(|f| sfx.contains(*f)) {
        let add = affixes
            .rules
            .iter()
            .filter(|r| r.kind == AffixKind::Suffix && r.flag == *f && !r.add.is_empty())
            .filter(|r| w[start..end].ends_with(r.add.as_str()) && end - r.add.len() > start)
            .map(|r| r.add.len())
            .max();
        if let Some(l) = add {
            end -= l;
            bounds.insert(end);
        }
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn exact_silver_boundaries_follow_the_applied_rules() {
        let aff = "PFX U Y 1\nPFX U 0 un .\nSFX P Y 2\nSFX P y iness [^aeiou]y\nSFX P 0 ness [^y]\n\
                   SFX Z Y 2\nSFX Z 0 rs e\nSFX Z 0 ers [^ey]\n";
        let affixes = AffixSet::parse(aff, Path::new("t.aff")).unwrap();
        let set = |v: &[usize]| v.iter().copied().collect::<BTreeSet<usize>>();
        // Written out by hand from the rules: love + rs, happy − y + iness, un + kind + ness.
        assert_eq!(derive(&affixes, "love", "lovers", &["Z"]), Some(set(&[4])));
        assert_eq!(derive(&affixes, "walk", "walkers", &["Z"]), Some(set(&[4])));
        assert_eq!(derive(&affixes, "happy", "unhappiness", &["U", "P"]), Some(set(&[2, 6])));
        assert_eq!(derive(&affixes, "kind", "unkindness", &["U", "P"]), Some(set(&[2, 6])));
        assert_eq!(derive(&affixes, "thee", "thee", &[]), Some(set(&[])));
        assert_eq!(derive(&affixes, "kind", "kindly", &["P"]), None);
        // The first bench's heuristic cuts the longest `add` that fits instead.
        let (pfx, sfx): (HashSet<&str>, HashSet<&str>) = (["U"].into(), ["P", "Z"].into());
        assert_eq!(longest_add_bounds(&affixes, "lovers", &["Z"], &pfx, &sfx), set(&[3]));
    }
}
