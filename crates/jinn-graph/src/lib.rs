//! `jinn-graph`: relational reasoning over knowledge graphs with complex amplitudes (the
//! "NSIR" capability). Entities are vectors in C^d, relations are diagonal gates acting on
//! them — unit-modulus phase rotations (RotatE-style) or general complex scalings
//! (ComplEx-style) — trained 1-vs-all with softmax cross-entropy and N3 regularisation
//! through the shared `jinn-train` loop. Answers are distributions over entities; multi-hop
//! questions compose gates or search over intermediate entities with t-norms (CQD-style).
//!
//! Modules: [`triples`] (TSV loading, vocabularies, reciprocals), [`model`] (scores),
//! [`eval`] (filtered MRR / Hits@k), [`paths`] (multi-hop and conjunctions), [`task`]
//! (training task, configs, loading trained runs).

pub mod error;
pub mod eval;
pub mod model;
pub mod paths;
pub mod task;
pub mod triples;

pub use error::{GraphError, Result};
pub use model::{GraphModel, GraphModelConfig, RelationKind};
pub use task::{GraphRunConfig, GraphTask, TrainedGraph, GRAPH_KIND};
pub use triples::{KnowledgeGraph, Triple, Vocab};
