//! MGT tokenizer: exact round trips, morph-boundary confinement, determinism, bad input,
//! segmentation sanity.

use jinn_text::tokenizer::{AffixSet, Encoding, MorphConfig, Tokenizer, TokenizerError, TrainConfig};
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

fn testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)
}

fn sample() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| std::fs::read_to_string(testdata("hamlet_sample.txt")).expect("sample is UTF-8"))
}

/// Morfessor's own default corpus weight (1) instead of MGT's cautious 5: the small sample then
/// gets many morph boundaries, so the boundary checks below have something to bite on.
fn weak_prior() -> MorphConfig {
    MorphConfig { corpus_weight: 1.0, ..MorphConfig::default() }
}

fn config(vocab: usize) -> TrainConfig {
    TrainConfig {
        vocab_size: vocab,
        affixes: AffixSet::load(&testdata("sample_en.aff")).unwrap(),
        morph: Some(weak_prior()),
        ..TrainConfig::default()
    }
}

fn trained() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| Tokenizer::train(&[sample()], &config(900)).unwrap())
}

/// As [`trained`] with the version 2 defaults: every merge a token, plain fewest-tokens encoding.
fn unpruned() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        let cfg = TrainConfig { merges_per_slot: 1.0, encoding: Encoding::FewestTokens, ..config(900) };
        Tokenizer::train(&[sample()], &cfg).unwrap()
    })
}

/// Byte offsets where the tokens of `ids` end.
fn token_ends(tok: &Tokenizer, ids: &[u32]) -> Vec<usize> {
    let mut off = 0;
    ids.iter()
        .map(|&id| {
            off += tok.token_bytes(id).unwrap().len();
            off
        })
        .collect()
}

fn assert_tokens_respect_units(tok: &Tokenizer, text: &str) {
    let ids = tok.encode(text);
    let ends: HashSet<usize> = token_ends(tok, &ids).into_iter().collect();
    for u in tok.unit_ends(text) {
        assert!(ends.contains(&u), "a token crosses the morph/piece boundary at byte {u} of {text:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_unicode_string_round_trips_exactly(s in any::<String>()) {
        let tok = trained();
        let ids = tok.encode(&s);
        prop_assert_eq!(tok.decode(&ids).unwrap(), s.clone());
        assert_tokens_respect_units(tok, &s);
    }

    #[test]
    fn word_like_text_round_trips(s in "([a-zA-Z]{1,12}|[ \t\n]{1,3}|[.,;:'!?]|[0-9]{1,4}|[é日本🙂]){0,40}") {
        let tok = trained();
        let ids = tok.encode(&s);
        prop_assert_eq!(tok.decode(&ids).unwrap(), s.clone());
        assert_tokens_respect_units(tok, &s);
    }
}

#[test]
fn fixed_edge_cases_round_trip_and_batch_matches_single() {
    let tok = trained();
    let docs = [
        "",
        " ",
        "  \n\t ",
        "unkindness",
        "Hamlet's  ghost 🙂🙂\r\n",
        "日本語のテキスト",
        "a\u{0301}b",
        sample(),
    ];
    let batch = tok.encode_batch(&docs);
    for (d, ids) in docs.iter().zip(&batch) {
        assert_eq!(&tok.encode(d), ids);
        assert_eq!(tok.decode(ids).unwrap(), *d);
    }
    // The training text compresses (merges are used): under half a token per byte.
    assert!(batch[7].len() * 2 < sample().len(), "{} tokens for {} bytes", batch[7].len(), sample().len());
    let with = tok.encode_with_specials("hi", true, true);
    assert_eq!(
        (with[0], *with.last().unwrap()),
        (jinn_text::tokenizer::BOS_ID, jinn_text::tokenizer::EOS_ID)
    );
    assert_eq!(tok.decode(&with).unwrap(), "hi");
}

#[test]
fn no_merge_crosses_a_morph_boundary() {
    let tok = trained();
    // Units (morphs with leading space, non-word pieces) of the training text.
    let text = sample();
    let mut units: HashSet<&[u8]> = HashSet::new();
    let mut start = 0;
    for end in tok.unit_ends(text) {
        units.insert(&text.as_bytes()[start..end]);
        start = end;
    }
    assert!(tok.merges().len() > 500);
    let first_merge = tok.byte_offset() + 256;
    for id in first_merge..tok.vocab_size() as u32 {
        let t = tok.token_bytes(id).unwrap();
        assert!(
            units.iter().any(|u| u.windows(t.len()).any(|w| w == t)),
            "merge token {:?} does not lie inside any morph of the training text",
            String::from_utf8_lossy(t)
        );
    }
    assert_tokens_respect_units(tok, text);
    // The check can fail: plain BPE on the same text learns tokens across these morph boundaries.
    let plain = Tokenizer::train(&[text], &TrainConfig { morph: None, ..config(900) }).unwrap();
    let crossing = (first_merge..plain.vocab_size() as u32)
        .filter(|&id| {
            let t = plain.token_bytes(id).unwrap();
            !units.iter().any(|u| u.windows(t.len()).any(|w| w == t))
        })
        .count();
    assert!(crossing > 0, "plain BPE should learn some cross-morph tokens");
}

#[test]
fn training_is_deterministic_and_files_round_trip() {
    let a = Tokenizer::train(&[sample()], &config(700)).unwrap();
    let b = Tokenizer::train(&[sample()], &config(700)).unwrap();
    assert_eq!(a.to_json(), b.to_json());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tok.json");
    a.save(&path).unwrap();
    let c = Tokenizer::load(&path).unwrap();
    assert_eq!(c.to_json(), a.to_json());
    assert_eq!(c.encode(sample()), a.encode(sample()));
    assert_eq!(a.vocab_size(), 700);
    assert_eq!(a.anchor_id(0), Some(3));
    assert_eq!(a.specials()[3], "<anchor_0>");
}

#[test]
fn training_rejects_small_vocab_and_empty_corpus() {
    let err = Tokenizer::train(&[sample()], &config(270)).unwrap_err();
    assert!(matches!(err, TokenizerError::VocabTooSmall { requested: 270, minimum: 275, .. }), "{err}");
    assert!(err.to_string().contains("at least 275"), "{err}");
    let none: [&str; 0] = [];
    assert!(matches!(Tokenizer::train(&none, &config(500)), Err(TokenizerError::EmptyCorpus)));
    assert!(matches!(Tokenizer::train(&["", ""], &config(500)), Err(TokenizerError::EmptyCorpus)));
}

fn load_err(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let tok = Tokenizer::train(&["unkind kindness walking talking"], &config(300)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&tok.to_json()).unwrap();
    edit(&mut v);
    Tokenizer::from_json(&v.to_string(), Path::new("tok.json")).unwrap_err().to_string()
}

#[test]
fn invalid_files_give_clear_errors() {
    let err = Tokenizer::from_json("{not json", Path::new("tok.json")).unwrap_err().to_string();
    assert!(err.contains("tok.json") && err.contains("not a valid MGT tokenizer JSON"), "{err}");
    let err = load_err(|v| v["version"] = 4.into());
    assert!(err.contains("`version`") && err.contains("unsupported version 4"), "{err}");
    let err = load_err(|v| {
        v["encoding"].take();
        v.as_object_mut().unwrap().remove("encoding");
    });
    assert!(err.contains("`encoding`") && err.contains("missing"), "{err}");
    let err = load_err(|v| v["encoding"] = "greedy".into());
    assert!(err.contains("not a valid MGT tokenizer JSON") && err.contains("greedy"), "{err}");
    let err = load_err(|v| {
        v["morphs"].as_object_mut().unwrap().remove("cost");
    });
    assert!(err.contains("`morphs.cost`") && err.contains("missing"), "{err}");
    let err = load_err(|v| v["morphs"]["cost"]["corpus_weight"] = (-1.0).into());
    assert!(err.contains("morphs.cost.corpus_weight"), "{err}");
    let err = load_err(|v| v["morphs"]["affixes"]["rules"][0]["condition"] = "[^y".into());
    assert!(err.contains("morphs.affixes.rules[0].condition") && err.contains("closing"), "{err}");
    let err = load_err(|v| v["version"] = 1.into());
    assert!(err.contains("`encoding`") && err.contains("version 2 field"), "{err}");
    let err = load_err(|v| v["merges"][1]["left"] = 9999.into());
    assert!(err.contains("merges[1].left") && err.contains("unknown merge token 9999"), "{err}");
    let err = load_err(|v| v["merges"][2]["left"] = 1.into());
    assert!(err.contains("unknown merge token 1"), "{err}");
    let err = load_err(|v| v["merges"][1]["id"] = v["merges"][0]["id"].clone());
    assert!(err.contains("merges[1].id") && err.contains("duplicate id"), "{err}");
    let err = load_err(|v| {
        v["merges"] = serde_json::json!([]);
        v["vocab_size"] = 200.into();
    });
    assert!(err.contains("vocab_size") && err.contains("smaller than the byte alphabet"), "{err}");
    let err = load_err(|v| v["format"] = "other".into());
    assert!(err.contains("`format`"), "{err}");
    let err = load_err(|v| v["specials"][1]["name"] = "<x>".into());
    assert!(err.contains("specials[1].name"), "{err}");
    let err = load_err(|v| v["morphs"]["analyses"] = serde_json::json!([["walking", [4, 3]]]));
    assert!(err.contains("morphs.analyses[0]") && err.contains("must increase"), "{err}");
    let err = load_err(|v| v["morphs"]["analyses"] = serde_json::json!([["walking", [4]]]));
    assert!(err.contains("morphs.analyses[0]") && err.contains("length 7"), "{err}");
    let err = load_err(|v| v["morphs"]["analyses"] = serde_json::json!([["b", [1]], ["a", [1]]]));
    assert!(err.contains("morphs.analyses[1]") && err.contains("out of order"), "{err}");
    let err = load_err(|v| v["morphs"]["analyses"] = serde_json::json!([["né", [2, 3]]]));
    assert!(err.contains("char boundaries"), "{err}");
    // A valid stored analysis is loaded and used.
    let tok = Tokenizer::train(&["unkind kindness walking talking"], &config(300)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&tok.to_json()).unwrap();
    v["morphs"]["analyses"] = serde_json::json!([["walking", [2, 7]]]);
    let edited = Tokenizer::from_json(&v.to_string(), Path::new("tok.json")).unwrap();
    assert_eq!(edited.segment("walking"), ["wa", "lking"]);
    let missing = Tokenizer::load(Path::new("/nonexistent/tok.json")).unwrap_err().to_string();
    assert!(missing.contains("/nonexistent/tok.json"), "{missing}");
    // Unknown ids and split characters on decode.
    let tok = trained();
    assert!(matches!(tok.decode(&[99_999]), Err(TokenizerError::UnknownId { id: 99_999, .. })));
    let e_acute = tok.encode("é");
    let first_byte = tok.byte_offset() + 0xC3;
    assert!(matches!(tok.decode(&[first_byte]), Err(TokenizerError::InvalidUtf8 { valid_up_to: 0 })));
    assert_eq!(tok.decode(&e_acute).unwrap(), "é");
}

#[test]
fn affix_seeded_segmentation_splits_at_known_affixes() {
    let stems = ["kind", "happy", "bold", "dark", "fair", "good", "sweet", "weak"];
    let verbs = ["walk", "talk", "play", "jump", "look", "call", "turn", "work"];
    let mut words = Vec::new();
    for s in stems {
        let ness = if let Some(st) = s.strip_suffix('y') { format!("{st}iness") } else { format!("{s}ness") };
        words.extend([s.to_string(), format!("un{s}"), ness.clone(), format!("un{ness}")]);
    }
    for v in verbs {
        words.extend([v.to_string(), format!("{v}ing"), format!("{v}ed"), format!("re{v}")]);
    }
    let corpus = words.join(" ");
    let tok = Tokenizer::train(&[corpus.as_str()], &config(400)).unwrap();
    assert_eq!(tok.segment("unkindness"), ["un", "kind", "ness"]);
    assert_eq!(tok.segment("walking"), ["walk", "ing"]);
    assert_eq!(tok.segment("unbold"), ["un", "bold"]);
    assert_eq!(tok.segment("talked"), ["talk", "ed"]);
    // An unseen word made of known morphs.
    assert_eq!(tok.segment("unworking"), ["un", "work", "ing"]);
    // Without affix lists, the MDL model alone still splits off the frequent prefix.
    let unseeded = TrainConfig { affixes: AffixSet::default(), morph: Some(weak_prior()), ..config(400) };
    let tok = Tokenizer::train(&[corpus.as_str()], &unseeded).unwrap();
    let seg = tok.segment("unkindness");
    assert!(seg.first() == Some(&"un") && seg.len() >= 2, "{seg:?}");
    // MGT's default prior splits the rule-licensed affixes and, here, nothing else.
    let cautious = TrainConfig { morph: Some(MorphConfig::default()), ..config(400) };
    let tok = Tokenizer::train(&[corpus.as_str()], &cautious).unwrap();
    assert_eq!(tok.segment("unkindness"), ["un", "kind", "ness"]);
    assert_eq!(tok.segment("walking"), ["walk", "ing"]);
    assert_eq!(tok.segment("walk"), ["walk"]);
}

/// A version 2 file turned into the version 1 layout: no encoding, cost or affixes, a flat
/// unknown-char cost instead.
fn as_version_1(tok: &Tokenizer, unknown_char_cost: f64) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&tok.to_json()).unwrap();
    v["version"] = 1.into();
    v.as_object_mut().unwrap().remove("encoding");
    let m = v["morphs"].as_object_mut().unwrap();
    m.remove("cost");
    m.remove("affixes");
    m.insert("unknown_char_cost".into(), unknown_char_cost.into());
    v.to_string()
}

#[test]
fn version_1_files_load_and_keep_their_behaviour() {
    let tok = unpruned();
    let v1 = Tokenizer::from_json(&as_version_1(tok, 3.9), Path::new("old.json")).unwrap();
    assert_eq!(v1.encoding(), jinn_text::tokenizer::format::Encoding::Merges);
    // Version 1 encodes by merges in rank order, as the bpe module's MergeTable does.
    let table = jinn_text::tokenizer::bpe::MergeTable::new(v1.merges());
    for word in ["Hamlet", "  unkindness!", "日本"] {
        let ids = v1.encode(word);
        assert_eq!(v1.decode(&ids).unwrap(), word);
        let mut by_units = Vec::new();
        let mut start = 0;
        for end in v1.unit_ends(word) {
            let seq = word.as_bytes()[start..end].iter().map(|&b| v1.byte_offset() + b as u32).collect();
            by_units.extend(table.apply(seq));
            start = end;
        }
        assert_eq!(ids, by_units, "{word}");
    }
    // Saving writes the current version, with the version 1 costs kept.
    let resaved = Tokenizer::from_json(&v1.to_json(), Path::new("new.json")).unwrap();
    assert_eq!(resaved.encode(sample()), v1.encode(sample()));
    let v: serde_json::Value = serde_json::from_str(&v1.to_json()).unwrap();
    assert_eq!(v["version"], 3);
    assert_eq!(v["morphs"]["unknown_char_cost"], 3.9);
}

#[test]
fn fewest_tokens_never_uses_more_tokens_than_merges() {
    let tok = unpruned();
    let v1 = Tokenizer::from_json(&as_version_1(tok, 3.9), Path::new("old.json")).unwrap();
    // Same vocabulary, same units; only the encoding differs.
    let (mut fewer, mut units) = (0, 0);
    let mut start = 0;
    let text = sample();
    for end in tok.unit_ends(text) {
        let unit = &text[start..end];
        start = end;
        let (a, b) = (tok.encode(unit).len(), v1.encode(unit).len());
        assert!(a <= b, "{unit:?}: {a} tokens vs {b} by merges");
        fewer += usize::from(a < b);
        units += 1;
    }
    assert!(units > 1000);
    eprintln!("{fewer} of {units} units need fewer tokens than the merges give");
}

#[test]
fn held_out_words_split_at_their_affixes() {
    let aff = "PFX U Y 1\nPFX U 0 un .\nPFX M Y 1\nPFX M 0 mis .\nSFX P Y 3\nSFX P y iness [^aeiou]y\n\
               SFX P 0 ness [^y]\nSFX P 0 ness [aeiou]y\nSFX Y Y 1\nSFX Y 0 ly .\nSFX L Y 1\nSFX L 0 ment .\n";
    let affixes = AffixSet::parse(aff, Path::new("t.aff")).unwrap();
    // The corpus holds the parts (and other words with these affixes), never the test words.
    let corpus = "the kind king was kindly and faithful; his kingly goodness, good payment for good pay \
                  and a misdeed in the deed. they govern the land and unwise men are wise. \
                  the king is kind to the kingly and faithful men who govern";
    let cfg = TrainConfig {
        vocab_size: 400,
        affixes,
        morph: Some(MorphConfig::default()),
        ..TrainConfig::default()
    };
    let tok = Tokenizer::train(&[corpus], &cfg).unwrap();
    let cases = [
        ("unkindness", &["un", "kind", "ness"][..]),
        ("unfaithfulness", &["un", "faithful", "ness"]),
        ("misgovernment", &["mis", "govern", "ment"]),
        ("kingliness", &["king", "l", "iness"]), // king|ly − y + iness
        ("unkingly", &["un", "king", "ly"]),
    ];
    for (word, morphs) in cases {
        assert!(!corpus.contains(word), "{word} must be held out");
        assert_eq!(tok.segment(word), morphs, "{word}");
    }
    // The rules travel with the file: a reloaded tokenizer cuts new words the same way.
    let reloaded = Tokenizer::from_json(&tok.to_json(), Path::new("tok.json")).unwrap();
    for (word, morphs) in cases {
        assert_eq!(reloaded.segment(word), morphs, "{word} after reload");
    }
    // No attested stem ("witne", "har" are not corpus words): no rule cuts these.
    assert_eq!(tok.segment("witness"), ["witness"]);
    assert_eq!(tok.segment("harness"), ["harness"]);
    // Tokens stay inside the morphs of a new word.
    assert_tokens_respect_units(&tok, " unkindness misgovernment");
}

#[test]
fn intermediate_tokens_become_scaffolding_and_everything_still_round_trips() {
    let (tok, plain) = (trained(), unpruned());
    // Same budget, but some BPE merges were dropped from the vocabulary and their ids reused.
    assert_eq!((tok.vocab_size(), plain.vocab_size()), (900, 900));
    assert!(tok.scaffold_len() > 0 && plain.scaffold_len() == 0);
    let vocab: HashSet<&[u8]> = (0..900).map(|id| tok.token_bytes(id).unwrap()).collect();
    assert!(tok.token_bytes(900).is_none(), "scaffolding ids are outside the vocabulary");
    // Removal keeps the tokens that encoding uses: fewer tokens for the training text.
    let (n, n_plain) = (tok.encode(sample()).len(), plain.encode(sample()).len());
    assert!(n < n_plain, "{n} tokens with removal vs {n_plain} without");
    // Scaffolding is never emitted, by either encoding, and every morph still round-trips.
    let merges = tok.clone().with_encoding(Encoding::Merges);
    for t in [tok, &merges] {
        let ids = t.encode(sample());
        assert!(ids.iter().all(|&id| (id as usize) < t.vocab_size()));
        assert_eq!(t.decode(&ids).unwrap(), sample());
        assert_tokens_respect_units(t, sample());
    }
    // Every scaffolding token's bytes lie inside some vocabulary-spelled unit; the file keeps
    // them as merges with ids from vocab_size on, and loads back to the same encoder.
    let scaffold: Vec<_> = tok.merges().iter().filter(|m| m.id >= 900).collect();
    assert_eq!(scaffold.len(), tok.scaffold_len());
    assert!(scaffold.iter().enumerate().all(|(k, m)| m.id == 900 + k as u32));
    let kept: Vec<u32> = tok.merges().iter().map(|m| m.id).filter(|&id| id < 900).collect();
    assert_eq!(kept, (tok.byte_offset() + 256..900).collect::<Vec<_>>());
    let loaded = Tokenizer::from_json(&tok.to_json(), Path::new("t.json")).unwrap();
    assert_eq!(loaded.encode(sample()), tok.encode(sample()));
    assert_eq!(loaded.to_json(), tok.to_json());
    // A scaffolding token is not a vocabulary token under another id.
    let first = tok.byte_offset() as usize + 256;
    let all = tok.clone().with_encoding(Encoding::Merges);
    for m in &scaffold {
        let (l, r) = m.pair;
        let spelled: Vec<u8> = [l, r].iter().flat_map(|&p| bytes_of(&all, p, first)).collect();
        assert!(!vocab.contains(spelled.as_slice()), "{:?}", String::from_utf8_lossy(&spelled));
    }
}

/// The bytes of any id (scaffolding included), rebuilt from the merges.
fn bytes_of(tok: &Tokenizer, id: u32, first_merge: usize) -> Vec<u8> {
    if (id as usize) < first_merge {
        return tok.token_bytes(id).unwrap().to_vec();
    }
    let m = tok.merges().iter().find(|m| m.id == id).unwrap();
    let mut b = bytes_of(tok, m.pair.0, first_merge);
    b.extend(bytes_of(tok, m.pair.1, first_merge));
    b
}

#[test]
fn version_2_files_load_and_encode_as_before() {
    let plain = unpruned();
    let mut v: serde_json::Value = serde_json::from_str(&plain.to_json()).unwrap();
    v["version"] = 2.into();
    let v2 = Tokenizer::from_json(&v.to_string(), Path::new("v2.json")).unwrap();
    assert_eq!(v2.encoding(), Encoding::FewestTokens);
    assert_eq!(v2.encode(sample()), plain.encode(sample()));
    // Version 3 features in a version 2 file are errors naming the field.
    let mut bad = v.clone();
    bad["encoding"] = "fewest_tokens_space_cut".into();
    let err = Tokenizer::from_json(&bad.to_string(), Path::new("v2.json")).unwrap_err().to_string();
    assert!(err.contains("`encoding`") && err.contains("version 3"), "{err}");
    let mut v: serde_json::Value = serde_json::from_str(&trained().to_json()).unwrap();
    v["version"] = 2.into();
    v["encoding"] = "fewest_tokens".into();
    let err = Tokenizer::from_json(&v.to_string(), Path::new("v2.json")).unwrap_err().to_string();
    assert!(err.contains("merges[") && err.contains("no scaffolding"), "{err}");
    // In version 3, scaffolding ids must count up from vocab_size in rank order.
    let mut v: serde_json::Value = serde_json::from_str(&trained().to_json()).unwrap();
    let k = v["merges"].as_array().unwrap().iter().position(|m| m["id"].as_u64().unwrap() >= 900).unwrap();
    v["merges"][k]["id"] = 5000.into();
    let err = Tokenizer::from_json(&v.to_string(), Path::new("v3.json")).unwrap_err().to_string();
    assert!(err.contains(&format!("merges[{k}].id")) && err.contains("expected 900"), "{err}");
}
