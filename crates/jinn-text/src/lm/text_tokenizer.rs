//! The tokenizer an LM is trained with: raw UTF-8 bytes (256 ids) or an MGT [`Tokenizer`].
//! It is stored with the run (in the shard directory and in every checkpoint) as a
//! [`TokenizerSpec`], so evaluation and generation use exactly the training vocabulary.

use serde::{Deserialize, Serialize};
use std::path::Path;

use super::error::LmError;
use crate::tokenizer::Tokenizer;

/// A text ↔ token-id mapping.
#[derive(Debug, Clone)]
pub enum TextTokenizer {
    /// Each UTF-8 byte is a token (vocabulary 256).
    Bytes,
    /// A trained MGT tokenizer.
    Mgt(Box<Tokenizer>),
}

/// The serialisable form of a [`TextTokenizer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TokenizerSpec {
    /// Byte-level.
    Bytes,
    /// MGT, its JSON file inline.
    Mgt {
        /// The tokenizer file's JSON text.
        json: String,
    },
}

impl TextTokenizer {
    /// `bytes`, or the path of an MGT tokenizer file (`jinn text train-tokenizer` output).
    pub fn from_setting(setting: &str) -> Result<Self, LmError> {
        if setting == "bytes" {
            return Ok(TextTokenizer::Bytes);
        }
        let tok = Tokenizer::load(Path::new(setting)).map_err(|e| {
            LmError::Tokenizer(format!(
                "data.tokenizer = {setting:?}: expected `bytes` or an MGT tokenizer file: {e}"
            ))
        })?;
        Ok(TextTokenizer::Mgt(Box::new(tok)))
    }

    /// Rebuilds the tokenizer stored as `spec`.
    pub fn from_spec(spec: &TokenizerSpec) -> Result<Self, LmError> {
        match spec {
            TokenizerSpec::Bytes => Ok(TextTokenizer::Bytes),
            TokenizerSpec::Mgt { json } => Tokenizer::from_json(json, Path::new("<stored tokenizer>"))
                .map(|t| TextTokenizer::Mgt(Box::new(t)))
                .map_err(|e| LmError::Tokenizer(e.to_string())),
        }
    }

    /// The serialisable form.
    pub fn spec(&self) -> TokenizerSpec {
        match self {
            TextTokenizer::Bytes => TokenizerSpec::Bytes,
            TextTokenizer::Mgt(t) => TokenizerSpec::Mgt { json: t.to_json() },
        }
    }

    /// Number of token ids.
    pub fn vocab_size(&self) -> usize {
        match self {
            TextTokenizer::Bytes => 256,
            TextTokenizer::Mgt(t) => t.vocab_size(),
        }
    }

    /// Token ids of `text`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match self {
            TextTokenizer::Bytes => text.bytes().map(u32::from).collect(),
            TextTokenizer::Mgt(t) => t.encode(text),
        }
    }

    /// The bytes of `ids` (an id outside the vocabulary is an error).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, LmError> {
        match self {
            TextTokenizer::Bytes => ids
                .iter()
                .map(|&i| u8::try_from(i).map_err(|_| LmError::Tokenizer(format!("byte token id {i} > 255"))))
                .collect(),
            TextTokenizer::Mgt(t) => t.decode_bytes(ids).map_err(|e| LmError::Tokenizer(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_spec() {
        let t = TextTokenizer::from_setting("bytes").unwrap();
        let ids = t.encode("añb");
        assert_eq!(ids, vec![97, 0xC3, 0xB1, 98]);
        assert_eq!(t.decode_bytes(&ids).unwrap(), "añb".as_bytes());
        assert!(t.decode_bytes(&[300]).is_err());
        assert_eq!(TextTokenizer::from_spec(&t.spec()).unwrap().vocab_size(), 256);
        let err = TextTokenizer::from_setting("/no/such/tokenizer.json").unwrap_err().to_string();
        assert!(err.contains("data.tokenizer"), "{err}");
    }
}
