//! Knowledge graphs on disk: a directory with `train.txt`, `valid.txt` and `test.txt`, each
//! line `head<TAB>relation<TAB>tail` (the PyKEEN/Nations/UMLS layout). Names become dense ids
//! through [`Vocab`]s; [`with_reciprocals`] adds the inverse edge `(t, r⁻¹, h)` of every triple,
//! relation `r⁻¹` having id `r + R`, so that head prediction is tail prediction on `r⁻¹`.

use crate::error::{GraphError, Result};
use std::collections::HashMap;
use std::path::Path;

/// The split files of a graph directory, in vocabulary order.
pub const SPLITS: [&str; 3] = ["train", "valid", "test"];

/// Names ↔ dense ids (`0..len`), ids in order of first appearance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vocab {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Vocab {
    /// A vocabulary over `names` (id = position); a repeated name is an error naming it.
    pub fn from_names(what: &'static str, names: Vec<String>) -> Result<Vocab> {
        let mut index = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            if index.insert(n.clone(), i).is_some() {
                return Err(GraphError::config(format!("{what} vocabulary"), format!("`{n}` occurs twice")));
            }
        }
        Ok(Vocab { names, index })
    }

    /// The id of `name`, adding it if new.
    fn intern(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// The id of `name`, if known.
    pub fn id(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The id of `name`, or an error saying it is an unknown `what` seen in `context`.
    pub fn lookup(&self, what: &'static str, name: &str, context: impl FnOnce() -> String) -> Result<usize> {
        self.id(name).ok_or_else(|| GraphError::UnknownName {
            what,
            name: name.to_string(),
            context: context(),
            known: self.len(),
        })
    }

    /// The name of id `i` (panics if out of range: ids come from this vocabulary).
    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// All names, by id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One edge `(head, relation, tail)` as vocabulary ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Triple {
    /// Head entity id.
    pub head: usize,
    /// Relation id (`≥ R` for a reciprocal relation).
    pub relation: usize,
    /// Tail entity id.
    pub tail: usize,
}

/// A line's three names and its 1-based line number.
type NamedTriple<'a> = ([&'a str; 3], usize);

/// Split `text` (the contents of `path`) into triples of names; blank lines are skipped, any
/// other line must hold exactly three non-empty tab-separated fields.
pub fn parse_triples<'a>(path: &Path, text: &'a str) -> Result<Vec<NamedTriple<'a>>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let bad = |reason: String| GraphError::Parse { path: path.to_path_buf(), line: i + 1, reason };
        if fields.len() != 3 {
            return Err(bad(format!(
                "expected 3 tab-separated fields (head, relation, tail), found {}: `{line}`",
                fields.len()
            )));
        }
        if let Some(k) = fields.iter().position(|f| f.is_empty()) {
            return Err(bad(format!("field {} ({}) is empty", k + 1, ["head", "relation", "tail"][k])));
        }
        out.push(([fields[0], fields[1], fields[2]], i + 1));
    }
    Ok(out)
}

/// A knowledge graph: vocabularies and the three splits (without reciprocals).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KnowledgeGraph {
    /// Entity names.
    pub entities: Vocab,
    /// Relation names (ids `0..R`; reciprocals `R..2R` have no names of their own).
    pub relations: Vocab,
    /// Training triples.
    pub train: Vec<Triple>,
    /// Validation triples.
    pub valid: Vec<Triple>,
    /// Test triples.
    pub test: Vec<Triple>,
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| GraphError::Io { path: path.to_path_buf(), source })
}

impl KnowledgeGraph {
    /// Load `dir/{train,valid,test}.txt`; the vocabularies hold every name of the three
    /// splits, in order of first appearance (train first).
    pub fn load(dir: &Path) -> Result<KnowledgeGraph> {
        let mut g = KnowledgeGraph::default();
        for split in SPLITS {
            let path = dir.join(format!("{split}.txt"));
            let text = read(&path)?;
            let triples: Vec<Triple> = parse_triples(&path, &text)?
                .into_iter()
                .map(|([h, r, t], _)| Triple {
                    head: g.entities.intern(h),
                    relation: g.relations.intern(r),
                    tail: g.entities.intern(t),
                })
                .collect();
            *g.split_mut(split) = triples;
        }
        if g.train.is_empty() {
            return Err(GraphError::config(
                "data",
                format!("{} holds no triples", dir.join("train.txt").display()),
            ));
        }
        Ok(g)
    }

    /// Load `dir`'s splits with fixed vocabularies (a trained model's); a name they lack is an
    /// error naming the file and line.
    pub fn load_with_vocab(dir: &Path, entities: Vocab, relations: Vocab) -> Result<KnowledgeGraph> {
        let mut g = KnowledgeGraph { entities, relations, ..Default::default() };
        for split in SPLITS {
            let path = dir.join(format!("{split}.txt"));
            let text = read(&path)?;
            let mut triples = Vec::new();
            for ([h, r, t], line) in parse_triples(&path, &text)? {
                let at = || format!("{}:{line}", path.display());
                triples.push(Triple {
                    head: g.entities.lookup("entity", h, at)?,
                    relation: g.relations.lookup("relation", r, at)?,
                    tail: g.entities.lookup("entity", t, at)?,
                });
            }
            *g.split_mut(split) = triples;
        }
        Ok(g)
    }

    fn split_mut(&mut self, split: &str) -> &mut Vec<Triple> {
        match split {
            "train" => &mut self.train,
            "valid" => &mut self.valid,
            _ => &mut self.test,
        }
    }

    /// The triples of `split` (`train`, `valid` or `test`).
    pub fn split(&self, split: &str) -> Result<&[Triple]> {
        match split {
            "train" => Ok(&self.train),
            "valid" => Ok(&self.valid),
            "test" => Ok(&self.test),
            other => {
                Err(GraphError::config("split", format!("expected train, valid or test, got `{other}`")))
            }
        }
    }

    /// Every triple of the three splits.
    pub fn all(&self) -> impl Iterator<Item = &Triple> {
        self.train.iter().chain(&self.valid).chain(&self.test)
    }

    /// Number of entities `E`.
    pub fn num_entities(&self) -> usize {
        self.entities.len()
    }

    /// Number of named relations `R` (models hold `2R` with the reciprocals).
    pub fn num_relations(&self) -> usize {
        self.relations.len()
    }
}

/// `triples` followed by their reciprocals `(t, r + num_relations, h)`.
pub fn with_reciprocals(triples: &[Triple], num_relations: usize) -> Vec<Triple> {
    let inverse =
        triples.iter().map(|t| Triple { head: t.tail, relation: t.relation + num_relations, tail: t.head });
    triples.iter().copied().chain(inverse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_graph(dir: &Path, train: &str, valid: &str, test: &str) {
        for (name, text) in [("train", train), ("valid", valid), ("test", test)] {
            std::fs::write(dir.join(format!("{name}.txt")), text).unwrap();
        }
    }

    #[test]
    fn loads_vocab_in_order_and_adds_reciprocals() {
        let dir = tempfile::tempdir().unwrap();
        write_graph(dir.path(), "a\tr\tb\nb\ts\tc\r\n\n", "c\tr\ta\n", "a\ts\td\n");
        let g = KnowledgeGraph::load(dir.path()).unwrap();
        assert_eq!(g.entities.names(), ["a", "b", "c", "d"]);
        assert_eq!(g.relations.names(), ["r", "s"]);
        assert_eq!(g.test, vec![Triple { head: 0, relation: 1, tail: 3 }]);
        let all = with_reciprocals(&g.train, 2);
        assert_eq!(all[2], Triple { head: 1, relation: 2, tail: 0 });
        assert_eq!(all[3], Triple { head: 2, relation: 3, tail: 1 });
    }

    #[test]
    fn malformed_lines_and_unknown_names_are_errors_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        write_graph(dir.path(), "a\tr\tb\na r b\n", "", "");
        let err = KnowledgeGraph::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("train.txt:2") && err.contains("3 tab-separated fields"), "{err}");

        write_graph(dir.path(), "a\tr\tb\n", "a\t\tb\n", "");
        let err = KnowledgeGraph::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("valid.txt:1") && err.contains("relation"), "{err}");

        let g = KnowledgeGraph::load(&{
            write_graph(dir.path(), "a\tr\tb\n", "", "");
            dir.path().to_path_buf()
        })
        .unwrap();
        write_graph(dir.path(), "a\tr\tb\n", "", "\n\na\tr\tzz\n");
        let err = KnowledgeGraph::load_with_vocab(dir.path(), g.entities.clone(), g.relations.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("test.txt:3") && err.contains("unknown entity `zz`"), "{err}");
        write_graph(dir.path(), "a\tq\tb\n", "", "");
        let err =
            KnowledgeGraph::load_with_vocab(dir.path(), g.entities, g.relations).unwrap_err().to_string();
        assert!(err.contains("train.txt:1") && err.contains("unknown relation `q`"), "{err}");

        let err = KnowledgeGraph::load(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(err.contains("missing/train.txt"), "{err}");
    }
}
