//! Step checkpoints: one directory per step, `run_dir/step_000123/`, holding
//!
//! * `model.safetensors` — the weights, keyed by module path (Burn's `SafetensorsStore`),
//!   plus the metadata entry `jinn.param_ids` (module path → Burn `ParamId`);
//! * `optimizer.bpk` — the optimiser state in Burn's burnpack format. Burn 0.22 can only
//!   serialise an `OptimizerRecord` as burnpack (its fields are crate-private, there is no
//!   safetensors path), and the record is keyed by `ParamId`, not by module path. A model
//!   loaded from safetensors into a freshly built module would get *new* ids and Burn would
//!   silently restart every Adam moment; [`load_model`] therefore restores the saved ids;
//! * `state.json` — [`TrainState`]: step, model kind, full resolved config, seed, loader
//!   positions, the head of the metric history, and an `extra` map for model-specific fields;
//! * `manifest.json` — length and CRC32C of each of the files above, written last.
//!
//! A checkpoint is written into `run_dir/.tmp-step_000123-<pid>/`, every file and the
//! directory fsynced, then renamed to its final name (the rename is the commit, so the
//! files inside need no per-file atomic write) and `run_dir` fsynced. A crash leaves at
//! worst a `.tmp-*` directory, which is never read and is removed by
//! [`remove_stale_temp_dirs`]. [`latest_good`] picks the newest checkpoint whose manifest,
//! checksums and state all verify, naming every newer one it had to skip.

use crate::error::{Result, TrainError};
use crate::metrics_log::MetricRecord;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Bytes, Tensor};
use jinn_data::loader::LoaderPosition;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File name of the weights inside a checkpoint directory.
pub const MODEL_FILE: &str = "model.safetensors";
/// File name of the optimiser state (burnpack).
pub const OPTIMIZER_FILE: &str = "optimizer.bpk";
/// File name of the training state.
pub const STATE_FILE: &str = "state.json";
/// File name of the checksum manifest.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Version of the checkpoint layout, stored in the manifest.
pub const FORMAT_VERSION: u32 = 1;
/// Safetensors metadata key holding the module-path → `ParamId` map (JSON).
const PARAM_IDS_KEY: &str = "jinn.param_ids";

/// Everything besides tensors that a resumed run needs (`state.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Optimiser updates applied so far (the next update uses `lr(step)`).
    pub step: u64,
    /// Which model this checkpoint belongs to (e.g. `"tokenizer"`); loading into another
    /// kind is refused.
    pub model_kind: String,
    /// The full resolved config of the run, so loading needs no repeated hyperparameters.
    pub config: serde_json::Value,
    /// The run seed; every random draw derives from (seed, step, purpose).
    pub seed: u64,
    /// Position of the training loader.
    pub loader: Option<LoaderPosition>,
    /// Position of the validation loader, if it keeps one.
    #[serde(default)]
    pub val_loader: Option<LoaderPosition>,
    /// The most recent metric records (newest last), for a quick look without the logs.
    #[serde(default)]
    pub metrics_head: Vec<MetricRecord>,
    /// Model-specific additions (e.g. LAM code-usage counters).
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl TrainState {
    /// Refuse a checkpoint of another model kind, or whose stored `model` config section, read
    /// through `normalise` (see [`crate::train_loop::TrainTask::normalise_model_config`]),
    /// differs from `model_config` (when given); the error names the first differing key.
    pub fn ensure_compatible(
        &self,
        dir: &Path,
        model_kind: &str,
        model_config: Option<&serde_json::Value>,
        normalise: impl Fn(&serde_json::Value) -> serde_json::Value,
    ) -> Result<()> {
        if self.model_kind != model_kind {
            return Err(TrainError::checkpoint(
                dir,
                format!("holds a `{}` model, expected `{model_kind}`", self.model_kind),
            ));
        }
        if let Some(want) = model_config {
            let have = normalise(self.config.get("model").unwrap_or(&serde_json::Value::Null));
            if let Some((key, a, b)) = first_difference("model", &have, want) {
                return Err(TrainError::checkpoint(
                    dir,
                    format!("config key `{key}` is {a} in the checkpoint but {b} in the current config"),
                ));
            }
        }
        Ok(())
    }
}

/// The first dotted key where two JSON values differ, with both values rendered.
fn first_difference(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            // A section's `kind` decides which other keys it has: a differing kind comes first.
            let (kind, rest): (Vec<&String>, Vec<&String>) = keys.into_iter().partition(|k| *k == "kind");
            kind.into_iter().chain(rest).find_map(|k| {
                let (va, vb) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                first_difference(&format!("{path}.{k}"), va, vb)
            })
        }
        _ if a == b => None,
        _ => Some((path.to_string(), a.to_string(), b.to_string())),
    }
}

/// Length and checksum of one checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    /// Size in bytes.
    pub len: u64,
    /// CRC32C of the whole file.
    pub crc32c: u32,
}

/// `manifest.json`: what a complete checkpoint holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The checkpoint's step (must match the directory name and `state.json`).
    pub step: u64,
    /// File name → length and checksum.
    pub files: BTreeMap<String, FileSum>,
}

/// A checkpoint copied to host memory: what the (possibly background) writer needs.
/// Building it is the only part that touches the device.
#[derive(Debug, Clone)]
pub struct CheckpointData {
    /// `model.safetensors` bytes.
    pub model: Vec<u8>,
    /// `optimizer.bpk` bytes.
    pub optimizer: Vec<u8>,
    /// The training state.
    pub state: TrainState,
}

/// Collects module path → `ParamId` for every float parameter.
#[derive(Default)]
struct IdCollector {
    path: Vec<String>,
    ids: BTreeMap<String, u64>,
}

impl ModuleVisitor for IdCollector {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.ids.insert(self.path.join("."), param.id.val());
    }
}

/// Sets each float parameter's `ParamId` from a module path → id map.
struct IdRestorer<'a> {
    path: Vec<String>,
    ids: &'a BTreeMap<String, u64>,
    restored: usize,
}

impl ModuleMapper for IdRestorer<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }
    fn map_float<const D: usize>(&mut self, mut param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if let Some(&id) = self.ids.get(&self.path.join(".")) {
            param.id = ParamId::from(id);
            self.restored += 1;
        }
        param
    }
}

/// Module path → `ParamId` of every float parameter of `model`.
pub fn param_ids<M: Module>(model: &M) -> BTreeMap<String, u64> {
    let mut c = IdCollector::default();
    model.visit(&mut c);
    c.ids
}

/// Copy the model weights, optimiser state and `state` to host memory.
pub fn snapshot<M: Module>(model: &M, optim: &ModuleOptimizer, state: TrainState) -> Result<CheckpointData> {
    let ids = serde_json::to_string(&param_ids(model)).expect("a string map serialises");
    let mut store = SafetensorsStore::from_bytes(None).metadata(PARAM_IDS_KEY, ids);
    model
        .save_into(&mut store)
        .map_err(|e| TrainError::checkpoint("<memory>", format!("serialising the model: {e}")))?;
    let model_bytes = store
        .get_bytes()
        .map_err(|e| TrainError::checkpoint("<memory>", format!("serialising the model: {e}")))?;
    let optimizer = optim
        .into_bytes()
        .map_err(|e| TrainError::checkpoint("<memory>", format!("serialising the optimizer: {e}")))?;
    Ok(CheckpointData { model: model_bytes, optimizer: optimizer.to_vec(), state })
}

/// `step_000123` (six digits at least, more for steps ≥ 10⁶).
pub fn step_dir_name(step: u64) -> String {
    format!("step_{step:06}")
}

/// The step of a directory named like [`step_dir_name`], if it is one.
pub fn parse_step_dir(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("step_")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Committed checkpoint steps in `run_dir`, ascending (temp directories excluded; the
/// checkpoints are not verified).
pub fn list_steps(run_dir: &Path) -> Result<Vec<u64>> {
    let mut steps = Vec::new();
    let entries = match std::fs::read_dir(run_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(steps),
        Err(e) => return Err(TrainError::io(run_dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| TrainError::io(run_dir, e))?;
        if let Some(step) = entry.file_name().to_str().and_then(parse_step_dir) {
            if entry.path().is_dir() {
                steps.push(step);
            }
        }
    }
    steps.sort_unstable();
    Ok(steps)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<FileSum> {
    let mut f = File::create(path).map_err(|e| TrainError::io(path, e))?;
    f.write_all(bytes).map_err(|e| TrainError::io(path, e))?;
    f.sync_all().map_err(|e| TrainError::io(path, e))?;
    Ok(FileSum { len: bytes.len() as u64, crc32c: crc32c::crc32c(bytes) })
}

fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| TrainError::io(dir, e))?;
    Ok(())
}

/// Write `data` as `run_dir/step_…/` (temp dir, fsync, rename). An existing checkpoint of
/// the same step is replaced. Returns the checkpoint directory.
pub fn write_checkpoint(run_dir: &Path, data: &CheckpointData) -> Result<PathBuf> {
    std::fs::create_dir_all(run_dir).map_err(|e| TrainError::io(run_dir, e))?;
    let name = step_dir_name(data.state.step);
    let tmp = run_dir.join(format!(".tmp-{name}-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| TrainError::io(&tmp, e))?;
    }
    std::fs::create_dir(&tmp).map_err(|e| TrainError::io(&tmp, e))?;
    let state_json = serde_json::to_vec_pretty(&data.state).expect("TrainState serialises");
    let mut files = BTreeMap::new();
    for (file, bytes) in
        [(MODEL_FILE, &data.model[..]), (OPTIMIZER_FILE, &data.optimizer[..]), (STATE_FILE, &state_json[..])]
    {
        files.insert(file.to_string(), write_synced(&tmp.join(file), bytes)?);
    }
    let manifest = Manifest { format_version: FORMAT_VERSION, step: data.state.step, files };
    write_synced(&tmp.join(MANIFEST_FILE), &serde_json::to_vec_pretty(&manifest).expect("serialises"))?;
    sync_dir(&tmp)?;

    let dest = run_dir.join(&name);
    if dest.exists() {
        // A directory cannot be renamed over a non-empty one: move the old one aside first.
        let old = run_dir.join(format!(".old-{name}-{}", std::process::id()));
        std::fs::rename(&dest, &old).map_err(|e| TrainError::io(&dest, e))?;
        std::fs::rename(&tmp, &dest).map_err(|e| TrainError::io(&dest, e))?;
        std::fs::remove_dir_all(&old).map_err(|e| TrainError::io(&old, e))?;
    } else {
        std::fs::rename(&tmp, &dest).map_err(|e| TrainError::io(&dest, e))?;
    }
    sync_dir(run_dir)?;
    Ok(dest)
}

/// Snapshot and write in one go, on the calling thread.
pub fn save<M: Module>(
    run_dir: &Path,
    model: &M,
    optim: &ModuleOptimizer,
    state: TrainState,
) -> Result<PathBuf> {
    write_checkpoint(run_dir, &snapshot(model, optim, state)?)
}

/// Read a file of a checkpoint, checking it against the manifest.
fn read_verified(dir: &Path, manifest: &Manifest, file: &str) -> Result<Vec<u8>> {
    let path = dir.join(file);
    let sum = manifest
        .files
        .get(file)
        .ok_or_else(|| TrainError::checkpoint(dir, format!("{MANIFEST_FILE} does not list {file}")))?;
    let bytes = std::fs::read(&path).map_err(|e| TrainError::io(&path, e))?;
    if bytes.len() as u64 != sum.len {
        return Err(TrainError::checkpoint(
            &path,
            format!("{} bytes, the manifest says {} (truncated or overwritten)", bytes.len(), sum.len),
        ));
    }
    let crc = crc32c::crc32c(&bytes);
    if crc != sum.crc32c {
        return Err(TrainError::checkpoint(
            &path,
            format!("CRC32C {crc:08x} does not match the manifest's {:08x} (corrupted)", sum.crc32c),
        ));
    }
    Ok(bytes)
}

/// A verified checkpoint: state parsed, every file present with matching checksum.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// Its `state.json`.
    pub state: TrainState,
    manifest: Manifest,
}

impl Checkpoint {
    /// Verify the checkpoint in `dir`: manifest, the size and CRC of every file, `state.json`,
    /// and that the step agrees between directory name, manifest and state.
    pub fn open(dir: &Path) -> Result<Checkpoint> {
        let mpath = dir.join(MANIFEST_FILE);
        let mbytes = std::fs::read(&mpath).map_err(|e| TrainError::io(&mpath, e))?;
        let manifest: Manifest = serde_json::from_slice(&mbytes)
            .map_err(|e| TrainError::checkpoint(&mpath, format!("unreadable manifest: {e}")))?;
        if manifest.format_version != FORMAT_VERSION {
            return Err(TrainError::checkpoint(
                dir,
                format!("format version {}, this build reads {FORMAT_VERSION}", manifest.format_version),
            ));
        }
        for file in [MODEL_FILE, OPTIMIZER_FILE] {
            read_verified(dir, &manifest, file)?;
        }
        let state_bytes = read_verified(dir, &manifest, STATE_FILE)?;
        let state: TrainState = serde_json::from_slice(&state_bytes)
            .map_err(|e| TrainError::checkpoint(dir.join(STATE_FILE), format!("unreadable state: {e}")))?;
        let dir_step = dir.file_name().and_then(|n| n.to_str()).and_then(parse_step_dir);
        if dir_step.is_some_and(|s| s != state.step) || manifest.step != state.step {
            return Err(TrainError::checkpoint(
                dir,
                format!(
                    "step disagrees: directory {dir_step:?}, manifest {}, state {}",
                    manifest.step, state.step
                ),
            ));
        }
        Ok(Checkpoint { dir: dir.to_path_buf(), state, manifest })
    }

    /// Load the weights into `model` (built with the same config) and restore the saved
    /// `ParamId`s, so the optimiser state of [`Checkpoint::load_optimizer`] applies.
    /// Missing or extra tensors and shape mismatches are errors naming the tensors.
    pub fn load_model<M: Module>(&self, mut model: M) -> Result<M> {
        let path = self.dir.join(MODEL_FILE);
        let bytes = read_verified(&self.dir, &self.manifest, MODEL_FILE)?;
        let ids = saved_param_ids(&path, &bytes)?;
        let mut store = SafetensorsStore::from_bytes(Some(bytes));
        let result = model.load_from(&mut store).map_err(|e| TrainError::checkpoint(&path, e.to_string()))?;
        if !result.errors.is_empty() || !result.unused.is_empty() {
            return Err(TrainError::checkpoint(
                &path,
                format!(
                    "does not fit this model (errors: {:?}; tensors the model lacks: {:?})",
                    result.errors, result.unused
                ),
            ));
        }
        let mut restorer = IdRestorer { path: Vec::new(), ids: &ids, restored: 0 };
        model = model.map(&mut restorer);
        if restorer.restored != ids.len() {
            return Err(TrainError::checkpoint(
                &path,
                format!(
                    "restored {} of {} parameter ids: module paths changed",
                    restorer.restored,
                    ids.len()
                ),
            ));
        }
        Ok(model)
    }

    /// Load the optimiser state into `optim` (a fresh optimiser of the same config). Call
    /// after [`Checkpoint::load_model`] so parameter ids match. Burn skips (and would
    /// silently restart) any state it cannot rebuild, e.g. one written by another
    /// `train.optim.optimizer`; that is an error here.
    pub fn load_optimizer(&self, optim: ModuleOptimizer) -> Result<ModuleOptimizer> {
        let path = self.dir.join(OPTIMIZER_FILE);
        let bytes = read_verified(&self.dir, &self.manifest, OPTIMIZER_FILE)?;
        let record = OptimizerRecord::from_bytes(Bytes::from_bytes_vec(bytes))
            .map_err(|e| TrainError::checkpoint(&path, e.to_string()))?;
        let saved = record.len();
        let optim = optim.load_record(record);
        let restored = optim.to_record().len();
        if restored != saved {
            return Err(TrainError::checkpoint(
                &path,
                format!(
                    "restored {restored} of {saved} optimizer state tensors: the checkpoint was \
                     written by another optimizer (train.optim.optimizer) or model"
                ),
            ));
        }
        Ok(optim)
    }
}

/// The `jinn.param_ids` map stored in a safetensors header.
fn saved_param_ids(path: &Path, bytes: &[u8]) -> Result<BTreeMap<String, u64>> {
    // Safetensors: u64 little-endian header length, then that many bytes of JSON.
    let bad = |why: String| TrainError::checkpoint(path, why);
    let n = bytes.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
    let header = n
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
        .ok_or_else(|| bad("safetensors header length exceeds the file".into()))?;
    let header: serde_json::Value =
        serde_json::from_slice(header).map_err(|e| bad(format!("unreadable safetensors header: {e}")))?;
    let ids = header
        .get("__metadata__")
        .and_then(|m| m.get(PARAM_IDS_KEY))
        .and_then(|v| v.as_str())
        .ok_or_else(|| bad(format!("no `{PARAM_IDS_KEY}` metadata (not written by jinn-train)")))?;
    serde_json::from_str(ids).map_err(|e| bad(format!("bad `{PARAM_IDS_KEY}` metadata: {e}")))
}

/// The newest checkpoint that verifies, and the newer ones that did not.
#[derive(Debug)]
pub struct LatestGood {
    /// The chosen checkpoint, if any verified.
    pub checkpoint: Option<Checkpoint>,
    /// Newer checkpoint directories that failed verification, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Find the newest checkpoint in `run_dir` that verifies ([`Checkpoint::open`]). Every newer
/// one that fails is named in `skipped` and logged as a warning. Temp directories of
/// interrupted writes are ignored.
pub fn latest_good(run_dir: &Path) -> Result<LatestGood> {
    let mut skipped = Vec::new();
    for step in list_steps(run_dir)?.into_iter().rev() {
        let dir = run_dir.join(step_dir_name(step));
        match Checkpoint::open(&dir) {
            Ok(c) => return Ok(LatestGood { checkpoint: Some(c), skipped }),
            Err(e) => {
                tracing::warn!("skipping checkpoint {}: {e}", dir.display());
                skipped.push((dir, e.to_string()));
            }
        }
    }
    Ok(LatestGood { checkpoint: None, skipped })
}

/// Open a trained run for inference: `path` is a run directory (its newest good checkpoint) or
/// one checkpoint directory. The checkpoint must hold a model of `kind`; returns it with its
/// stored run config.
pub fn open_trained<C: serde::de::DeserializeOwned>(path: &Path, kind: &str) -> Result<(Checkpoint, C)> {
    let checkpoint = if path.join(MANIFEST_FILE).exists() {
        Checkpoint::open(path)?
    } else {
        latest_good(path)?.checkpoint.ok_or_else(|| {
            TrainError::checkpoint(
                path,
                "holds no valid checkpoint (expected a run directory with step_* dirs)",
            )
        })?
    };
    if checkpoint.state.model_kind != kind {
        return Err(TrainError::checkpoint(
            &checkpoint.dir,
            format!("holds a `{}` model, expected `{kind}`", checkpoint.state.model_kind),
        ));
    }
    let config = serde_json::from_value(checkpoint.state.config.clone())
        .map_err(|e| TrainError::checkpoint(&checkpoint.dir, format!("unreadable config: {e}")))?;
    Ok((checkpoint, config))
}

/// Retention as a pure function: of `steps`, which to delete so that the `keep_last` newest
/// and every multiple of `keep_every` (0 = none) remain. Returned ascending.
pub fn steps_to_delete(steps: &[u64], keep_last: usize, keep_every: u64) -> Vec<u64> {
    let mut sorted = steps.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let newest_from = sorted.len().saturating_sub(keep_last);
    sorted
        .iter()
        .enumerate()
        .filter(|&(i, &s)| i < newest_from && !(keep_every > 0 && s.is_multiple_of(keep_every)))
        .map(|(_, &s)| s)
        .collect()
}

/// Apply retention in `run_dir`; returns the deleted steps.
pub fn apply_retention(run_dir: &Path, keep_last: usize, keep_every: u64) -> Result<Vec<u64>> {
    let doomed = steps_to_delete(&list_steps(run_dir)?, keep_last, keep_every);
    for &step in &doomed {
        let dir = run_dir.join(step_dir_name(step));
        std::fs::remove_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
    }
    Ok(doomed)
}

/// Remove `.tmp-*` / `.old-*` directories left by interrupted writes. Call only when no
/// other writer uses `run_dir` (e.g. at start-up, before the background writer starts).
pub fn remove_stale_temp_dirs(run_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(run_dir) else { return Ok(removed) };
    for entry in entries {
        let entry = entry.map_err(|e| TrainError::io(run_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if (name.starts_with(".tmp-step_") || name.starts_with(".old-step_")) && entry.path().is_dir() {
            std::fs::remove_dir_all(entry.path()).map_err(|e| TrainError::io(entry.path(), e))?;
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests;
