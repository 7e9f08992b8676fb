//! Corpus → token shards: read a directory of `.txt` documents, split it by document
//! (deterministically from a seed: for Shakespeare, whole plays are held out), tokenize, and
//! write one shard per split plus `meta.json`, each file atomically.
//!
//! Shard file (`train.tokens`, `val.tokens`): the 8 bytes `JLMTOK01`, the token count as a
//! little-endian `u64`, then the tokens as little-endian `u32`. Documents are concatenated in
//! split order.

use jinn_data::atomic_file::write_atomically;
use jinn_data::rng::rng_for;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::error::LmError;
use super::text_tokenizer::{TextTokenizer, TokenizerSpec};

const MAGIC: &[u8; 8] = b"JLMTOK01";
/// The shard directory's description file.
pub const META_FILE: &str = "meta.json";

/// One document of a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// File name (without directory).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Reads every `*.txt` file of `dir` (sorted by name) as a document; a single file is one
/// document.
pub fn read_corpus(path: &Path) -> Result<Vec<Document>, LmError> {
    let read = |p: &Path| -> Result<Document, LmError> {
        let bytes = std::fs::read(p).map_err(|e| LmError::data(p, e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| LmError::data(p, format!("not UTF-8 text: {e}")))?;
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Document { name, text })
    };
    if path.is_file() {
        return Ok(vec![read(path)?]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| {
        LmError::data(path, format!("expected a directory of .txt files or a text file: {e}"))
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(LmError::data(path, "holds no .txt files"));
    }
    files.iter().map(|p| read(p)).collect()
}

/// Training and validation documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Training documents.
    pub train: Vec<Document>,
    /// Held-out documents.
    pub val: Vec<Document>,
}

/// Holds out `val_docs` whole documents, chosen by a permutation drawn from `seed`; the rest
/// train. Both keep the corpus (name) order.
pub fn split_by_document(docs: Vec<Document>, val_docs: usize, seed: u64) -> Result<Split, LmError> {
    if val_docs == 0 || val_docs >= docs.len() {
        return Err(LmError::data(
            "data.val_docs",
            format!(
                "must be between 1 and the number of documents − 1 = {}, got {val_docs}",
                docs.len() as i64 - 1
            ),
        ));
    }
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.shuffle(&mut rng_for(seed, "lm-split", 0));
    let mut held = vec![false; docs.len()];
    for &i in &order[..val_docs] {
        held[i] = true;
    }
    let (mut train, mut val) = (Vec::new(), Vec::new());
    for (doc, h) in docs.into_iter().zip(held) {
        if h {
            val.push(doc)
        } else {
            train.push(doc)
        }
    }
    Ok(Split { train, val })
}

/// What one shard holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// Document names, in order.
    pub docs: Vec<String>,
    /// Tokens.
    pub tokens: u64,
    /// UTF-8 bytes of the text (for bits per byte).
    pub bytes: u64,
}

impl ShardInfo {
    /// Tokens per byte of this text.
    pub fn tokens_per_byte(&self) -> f64 {
        self.tokens as f64 / self.bytes.max(1) as f64
    }
}

/// `meta.json` of a shard directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardMeta {
    /// The tokenizer the shards were made with.
    pub tokenizer: TokenizerSpec,
    /// Its vocabulary size.
    pub vocab_size: usize,
    /// The training shard.
    pub train: ShardInfo,
    /// The validation shard.
    pub val: ShardInfo,
}

/// A tokenized corpus in memory.
#[derive(Debug, Clone)]
pub struct LmData {
    /// Description.
    pub meta: ShardMeta,
    /// Training tokens.
    pub train: Vec<u32>,
    /// Validation tokens.
    pub val: Vec<u32>,
}

/// Tokenizes `docs` into one stream.
fn tokenize(tokenizer: &TextTokenizer, docs: &[Document]) -> (Vec<u32>, ShardInfo) {
    let mut tokens = Vec::new();
    let mut bytes = 0;
    for d in docs {
        tokens.extend(tokenizer.encode(&d.text));
        bytes += d.text.len() as u64;
    }
    let info =
        ShardInfo { docs: docs.iter().map(|d| d.name.clone()).collect(), tokens: tokens.len() as u64, bytes };
    (tokens, info)
}

/// Encodes a shard file.
fn shard_bytes(tokens: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + 4 * tokens.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
    for t in tokens {
        out.extend_from_slice(&t.to_le_bytes());
    }
    out
}

/// Reads a shard file.
pub fn read_shard(path: &Path) -> Result<Vec<u32>, LmError> {
    let bytes = std::fs::read(path).map_err(|e| LmError::data(path, e.to_string()))?;
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(LmError::data(path, "not a token shard (expected the JLMTOK01 header)"));
    }
    let count = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let body = &bytes[16..];
    if body.len() as u64 != count * 4 {
        return Err(LmError::data(
            path,
            format!("header says {count} tokens, file holds {} bytes of tokens (truncated?)", body.len()),
        ));
    }
    Ok(body.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
}

impl LmData {
    /// Tokenizes `split` and writes `train.tokens`, `val.tokens` and `meta.json` into `dir`.
    pub fn write(split: &Split, tokenizer: &TextTokenizer, dir: &Path) -> Result<LmData, LmError> {
        std::fs::create_dir_all(dir).map_err(|e| LmError::data(dir, e.to_string()))?;
        let (train, train_info) = tokenize(tokenizer, &split.train);
        let (val, val_info) = tokenize(tokenizer, &split.val);
        let meta = ShardMeta {
            tokenizer: tokenizer.spec(),
            vocab_size: tokenizer.vocab_size(),
            train: train_info,
            val: val_info,
        };
        let io = |p: PathBuf, r: jinn_data::error::Result<()>| r.map_err(|e| LmError::data(p, e.to_string()));
        io(dir.join("train.tokens"), write_atomically(dir.join("train.tokens"), &shard_bytes(&train)))?;
        io(dir.join("val.tokens"), write_atomically(dir.join("val.tokens"), &shard_bytes(&val)))?;
        let json = serde_json::to_vec_pretty(&meta).map_err(|e| LmError::data(dir, e.to_string()))?;
        io(dir.join(META_FILE), write_atomically(dir.join(META_FILE), &json))?;
        Ok(LmData { meta, train, val })
    }

    /// Reads a shard directory written by [`LmData::write`].
    pub fn load(dir: &Path) -> Result<LmData, LmError> {
        let meta_path = dir.join(META_FILE);
        let text =
            std::fs::read_to_string(&meta_path).map_err(|e| LmError::data(&meta_path, e.to_string()))?;
        let meta: ShardMeta =
            serde_json::from_str(&text).map_err(|e| LmError::data(&meta_path, format!("unreadable: {e}")))?;
        let train = read_shard(&dir.join("train.tokens"))?;
        let val = read_shard(&dir.join("val.tokens"))?;
        for (name, tokens, info) in [("train", &train, &meta.train), ("val", &val, &meta.val)] {
            if tokens.len() as u64 != info.tokens {
                return Err(LmError::data(
                    dir,
                    format!("{name}.tokens holds {} tokens, meta.json says {}", tokens.len(), info.tokens),
                ));
            }
            if let Some(bad) = tokens.iter().find(|&&t| t as usize >= meta.vocab_size) {
                return Err(LmError::data(
                    dir,
                    format!("{name}.tokens has id {bad} ≥ vocab_size {}", meta.vocab_size),
                ));
            }
        }
        Ok(LmData { meta, train, val })
    }

    /// The shards in `dir` if it has them, else: read `corpus`, split, tokenize with
    /// `tokenizer` (`bytes` or an MGT file) and write them there.
    pub fn prepare(
        corpus: &Path,
        tokenizer: &str,
        val_docs: usize,
        seed: u64,
        dir: &Path,
    ) -> Result<LmData, LmError> {
        if dir.join(META_FILE).exists() {
            return LmData::load(dir);
        }
        let tokenizer = TextTokenizer::from_setting(tokenizer)?;
        let split = split_by_document(read_corpus(corpus)?, val_docs, seed)?;
        LmData::write(&split, &tokenizer, dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, text: &str) -> Document {
        Document { name: name.into(), text: text.into() }
    }

    #[test]
    fn split_is_by_document_deterministic_and_complete() {
        let docs: Vec<Document> = (0..6).map(|i| doc(&format!("d{i}.txt"), &format!("text {i}"))).collect();
        let a = split_by_document(docs.clone(), 2, 7).unwrap();
        assert_eq!(a, split_by_document(docs.clone(), 2, 7).unwrap(), "same seed, same split");
        assert_eq!(a.val.len(), 2);
        let mut names: Vec<String> = a.train.iter().chain(&a.val).map(|d| d.name.clone()).collect();
        names.sort();
        assert_eq!(names, docs.iter().map(|d| d.name.clone()).collect::<Vec<_>>());
        assert!(split_by_document(docs.clone(), 6, 0).unwrap_err().to_string().contains("val_docs"));
        assert!(split_by_document(docs, 0, 0).is_err());
    }

    #[test]
    fn shards_round_trip_and_corruption_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let split = Split {
            train: vec![doc("a.txt", "hello "), doc("b.txt", "world")],
            val: vec![doc("c.txt", "ñ!")],
        };
        let written = LmData::write(&split, &TextTokenizer::Bytes, dir.path()).unwrap();
        assert_eq!(written.train, b"hello world".iter().map(|&b| b as u32).collect::<Vec<_>>());
        assert_eq!(written.meta.val.bytes, 3);
        assert_eq!(written.meta.train.docs, vec!["a.txt", "b.txt"]);
        let loaded = LmData::load(dir.path()).unwrap();
        assert_eq!((loaded.train, loaded.val, loaded.meta), (written.train, written.val, written.meta));
        let path = dir.path().join("val.tokens");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 2]).unwrap();
        assert!(LmData::load(dir.path()).unwrap_err().to_string().contains("truncated"));
    }

    #[test]
    fn corpus_reads_txt_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "B").unwrap();
        std::fs::write(dir.path().join("a.txt"), "A").unwrap();
        std::fs::write(dir.path().join("notes.md"), "skip").unwrap();
        let docs = read_corpus(dir.path()).unwrap();
        assert_eq!(docs, vec![doc("a.txt", "A"), doc("b.txt", "B")]);
        assert!(read_corpus(&dir.path().join("missing")).is_err());
    }
}
