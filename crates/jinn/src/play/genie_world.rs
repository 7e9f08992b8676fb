//! A trained Genie (tokenizer + action source + dynamics) as a [`WorldModel`] for `jinn play`:
//! each step appends the chosen action and samples the next frame from the last `window`
//! frames' tokens (MaskGIT or causal sampler, KV-cached within the window), then decodes the
//! window and returns its newest frame.

use super::action_keys::{latent_buttons, recorded_buttons};
use anyhow::Context;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::dataset::Dataset;
use jinn_data::FrameShape;
use jinn_nn::ops::on_cpu;
use jinn_serve::{ActionInfo, Frame, ModelError, ModelInfo, SplitInfo, StartSource, WorldModel, WorldState};
use jinn_world::code_partners::{code_partners, lam_code_counts};
use jinn_world::{frames_to_u8, frames_to_unit, load_genie, sample, Genie, SamplerConfig, World};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Frames a play step shows the dynamics unless told otherwise: each step re-runs the window's
/// context and decodes it, so latency grows with it.
pub const DEFAULT_WINDOW: usize = 4;

/// A loaded world model and what the page needs to know about it.
pub struct GenieWorld {
    /// The model; Burn modules are used from one thread at a time.
    genie: Mutex<Genie>,
    info: ModelInfo,
    /// Action vectors `[A, La]` that action ids index, exactly as the dynamics was trained
    /// ([`Genie::action_table`]: the LAM's code embeddings or codebook, or the recorded-action
    /// embeddings).
    action_table: Tensor<2>,
    /// Frames the dynamics sees at once (at most its training `seq_len`).
    window: usize,
    /// The training clip length (`seq_len`): the most frames any part of the model sees at once.
    trained: usize,
    /// Tokens per frame.
    tokens_per_frame: usize,
    /// Dataset the sessions can start from (`--data`), with its split names.
    data: Option<PathBuf>,
    sampler: SamplerConfig,
    device: Device,
    /// Where the model runs on the CPU. The server calls [`WorldModel`] from its blocking
    /// threads, which are not rayon threads: every parallel op of a frame would be handed to
    /// rayon's global pool and waited for, and its idle threads would sleep between ops. Inside
    /// `pool.install` the frame runs on a pool thread that works on its own ops, with the other
    /// threads kept awake for the rollout (`WarmPool`). `None` on a GPU device (the CPU only
    /// issues its work) or when no pool could be built.
    pool: Option<rayon::ThreadPool>,
}

/// The rayon pool a CPU model's frames run on (see [`GenieWorld::pool`]); `None` when none could
/// be built.
fn compute_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new().thread_name(|i| format!("jinn-play-{i}")).build().ok()
}

/// One session: the token history and the actions taken so far.
#[derive(Clone)]
struct Session {
    /// `[frames, N]` token ids, row-major.
    tokens: Vec<i64>,
    /// Action id of the transition into each frame after the first.
    actions: Vec<i64>,
    /// Steps taken (seeds each step's sampling).
    steps: u64,
}

impl GenieWorld {
    /// Load the newest good checkpoint of the dynamics run `run` onto `device`; `data` is a dataset
    /// directory (with `train/`, `val/`, … splits) to draw start frames from. Each step shows
    /// the dynamics the last `window` frames (default [`DEFAULT_WINDOW`], at most its training
    /// clip length; temporal attention is causal, so a shorter window is a prefix it was
    /// trained on).
    pub fn load(
        run: &Path,
        device: &Device,
        data: Option<&Path>,
        sampler: SamplerConfig,
        window: Option<usize>,
    ) -> anyhow::Result<Self> {
        let (genie, _cfg, step) = load_genie(run, device)
            .with_context(|| format!("--ckpt {}: loading the world model", run.display()))?;
        let trained = jinn_world::trained_clip_frames(run).unwrap_or(DEFAULT_WINDOW).max(2);
        let name = format!(
            "{} (step {step}, {:?} dynamics)",
            run.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            genie.dynamics.kind()
        );
        Self::new(genie, name, trained, data, sampler, window)
    }

    /// Serve `genie`, trained on `trained`-frame clips, under `name` (see [`GenieWorld::load`]).
    pub fn new(
        genie: Genie,
        name: String,
        trained: usize,
        data: Option<&Path>,
        sampler: SamplerConfig,
        window: Option<usize>,
    ) -> anyhow::Result<Self> {
        let device = genie.action_table().device();
        let window = match window {
            None => trained.min(DEFAULT_WINDOW),
            Some(w) if (2..=trained).contains(&w) => w,
            Some(w) => anyhow::bail!(
                "--window {w}: expected 2..={trained} (the dynamics was trained on {trained}-frame clips)"
            ),
        };
        let grid = genie.tokenizer.grid();
        let frame = FrameShape { height: grid.height, width: grid.width, channels: grid.channels };
        let action_table = genie.action_table();
        let actions = action_buttons(&genie, data, frame, trained, &device)?;
        let splits = match data {
            Some(d) => list_splits(d, frame)?,
            None => Vec::new(),
        };
        let tokens_per_frame = grid.num_patches();
        let info = ModelInfo { name, frame, actions, max_start_frames: window - 1, splits };
        let pool = on_cpu(&device).then(compute_pool).flatten();
        Ok(GenieWorld {
            genie: Mutex::new(genie),
            info,
            action_table,
            window,
            trained,
            tokens_per_frame,
            data: data.map(Path::to_path_buf),
            sampler,
            device,
            pool,
        })
    }

    /// `job` on the model's compute pool (see [`GenieWorld::pool`]), or here without one.
    fn on_pool<R: Send>(&self, job: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(job),
            None => job(),
        }
    }

    /// The tokenizer's reconstruction of `frames` (`[T, H, W, C]` u8 of `shape`), one frame
    /// per entry: what the model's own frames look like at best. Each frame is encoded and
    /// decoded with the `window` frames ending at it, as a play step decodes its newest frame.
    pub fn reconstruct(&self, frames: &[u8], shape: FrameShape) -> anyhow::Result<Vec<Vec<u8>>> {
        let t = frames.len() / shape.frame_bytes();
        self.on_pool(|| {
            let genie = self.genie.lock().map_err(|_| anyhow::anyhow!("model lock poisoned"))?;
            let video =
                frames_to_unit(frames, [1, t, shape.height, shape.width, shape.channels], &self.device);
            let window = Some(self.window);
            let decoded = World::decode(&*genie, World::encode(&*genie, video, window)?, window)?; // [1, t, h, w, c]
            let pixels = frames_to_u8(decoded);
            Ok(pixels.chunks_exact(shape.frame_bytes()).map(<[u8]>::to_vec).collect())
        })
    }

    /// The LAM's code of each transition of `frames` (`[T, H, W, C]` u8 of `shape`, T ≥ 2):
    /// the actions that would replay them; `None` for a model without a LAM.
    pub fn latent_codes(&self, frames: &[u8], shape: FrameShape) -> anyhow::Result<Option<Vec<u32>>> {
        let t = frames.len() / shape.frame_bytes();
        self.on_pool(|| {
            let genie = self.genie.lock().map_err(|_| anyhow::anyhow!("model lock poisoned"))?;
            if genie.lam.is_none() {
                return Ok(None);
            }
            let video =
                frames_to_unit(frames, [1, t, shape.height, shape.width, shape.channels], &self.device);
            let (_, ids) = World::latent_actions(&*genie, video, None, Some(self.trained))?;
            let ids = ids.ok_or_else(|| anyhow::anyhow!("the LAM returned no codes"))?; // [T − 1]
            let ids = ids.try_into_vec_as::<i64>().map_err(|e| anyhow::anyhow!("{e:?}"))?;
            Ok(Some(ids.into_iter().map(|i| i as u32).collect()))
        })
    }

    /// Frames as a `[1, T, H, W, C]` tensor in `[0, 1]`.
    fn video(&self, frames: &[Frame]) -> Tensor<5> {
        let s = self.info.frame;
        let bytes: Vec<u8> = frames.iter().flat_map(|f| f.pixels.iter().copied()).collect();
        frames_to_unit(&bytes, [1, frames.len(), s.height, s.width, s.channels], &self.device)
    }
}

impl WorldModel for GenieWorld {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn start_frames(&self, source: &StartSource) -> Result<Vec<Frame>, ModelError> {
        let Some(data) = &self.data else {
            return Err(ModelError::BadInput(
                "this server has no dataset to start from (start jinn play with --data DIR), \
                 upload start frames instead"
                    .into(),
            ));
        };
        let (split, episode, frame) = match source {
            StartSource::Sample => ("val".to_string(), 0, 0),
            StartSource::Dataset { split, episode, frame } => (split.clone(), *episode, *frame),
        };
        let split = match (source, self.info.splits.iter().any(|s| s.name == split)) {
            (_, true) => split,
            (StartSource::Sample, false) => self
                .info
                .splits
                .first()
                .map(|s| s.name.clone())
                .ok_or_else(|| ModelError::NotFound("the dataset has no splits".into()))?,
            (_, false) => return Err(ModelError::NotFound(format!("no split '{split}' in the dataset"))),
        };
        let dataset = Dataset::open_for_model(&data.join(&split), 1, self.info.frame)
            .map_err(|e| ModelError::Failed(e.to_string()))?;
        let Some(&r) = dataset.records().get(episode) else {
            return Err(ModelError::NotFound(format!(
                "split '{split}' has {} episodes; episode {episode} does not exist",
                dataset.records().len()
            )));
        };
        if frame >= r.len as usize {
            return Err(ModelError::NotFound(format!(
                "episode {episode} of '{split}' has {} frames; frame {frame} does not exist",
                r.len
            )));
        }
        // As much real context as a step shows the dynamics, within the episode.
        let count = self.info.max_start_frames.min(r.len as usize - frame);
        let window = dataset.read_window(r, frame, count).map_err(|e| ModelError::Failed(e.to_string()))?;
        let fb = self.info.frame.frame_bytes();
        window.frames.chunks_exact(fb).map(|f| Frame::new(self.info.frame, f.to_vec())).collect()
    }

    fn start(&self, frames: &[Frame]) -> Result<WorldState, ModelError> {
        self.on_pool(|| self.start_session(frames))
    }

    fn step(&self, state: &mut WorldState, action: u32) -> Result<Frame, ModelError> {
        self.on_pool(|| self.next_frame(state, action))
    }
}

impl GenieWorld {
    /// [`WorldModel::start`]: encode the start frames into a new session.
    fn start_session(&self, frames: &[Frame]) -> Result<WorldState, ModelError> {
        if frames.is_empty() || frames.len() > self.info.max_start_frames {
            return Err(ModelError::BadInput(format!(
                "{} start frames; expected 1..={}",
                frames.len(),
                self.info.max_start_frames
            )));
        }
        let genie = self.genie.lock().map_err(|_| ModelError::Failed("model lock poisoned".into()))?;
        let video = self.video(frames); // [1, T, H, W, C]
        let tokens = genie.tokenizer.encode(video.clone()).map_err(failed)?; // [1, T, N]
        let tokens: Vec<i64> = tokens.try_into_vec_as::<i64>().map_err(|e| failed(format!("{e:?}")))?;
        // The transitions between start frames: the LAM's codes for them, as in training;
        // without a LAM (recorded actions) they are unknown and take action 0.
        let actions = match (&genie.lam, frames.len()) {
            (Some(_), 2..) => {
                let (_, ids) = genie.latent_actions(video, None).map_err(failed)?;
                let ids = ids.ok_or_else(|| failed("the LAM returned no codes"))?; // [T − 1]
                ids.try_into_vec_as::<i64>().map_err(|e| failed(format!("{e:?}")))?
            }
            _ => vec![0; frames.len() - 1],
        };
        Ok(WorldState::new(Session { tokens, actions, steps: 0 }))
    }

    /// [`WorldModel::step`]: sample the frame that follows `action` and append it to the session.
    fn next_frame(&self, state: &mut WorldState, action: u32) -> Result<Frame, ModelError> {
        let session = state.expect_mut::<Session>()?;
        let n = self.tokens_per_frame;
        let have = session.tokens.len() / n;
        let context = have.min(self.window - 1);
        let first = have - context;
        session.actions.push(action as i64);
        let genie = self.genie.lock().map_err(|_| ModelError::Failed("model lock poisoned".into()))?;
        let ctx = Tensor::<3, Int>::from_data(
            TensorData::new(session.tokens[first * n..].to_vec(), [1, context, n]),
            &self.device,
        ); // [1, C, N]
        let ids = &session.actions[first..]; // the transitions into frames first+1 ..= have
        let la = self.action_table.dims()[1];
        let sel = Tensor::<1, Int>::from_data(TensorData::new(ids.to_vec(), [ids.len()]), &self.device);
        let actions = self.action_table.clone().select(0, sel).reshape([1, ids.len(), la]); // [1, C, La]
        let cfg =
            SamplerConfig { seed: self.sampler.seed.wrapping_add(session.steps), ..self.sampler.clone() };
        let rollout = sample(&genie.dynamics, ctx, actions, context + 1, &cfg).map_err(failed)?;
        let video = genie.tokenizer.decode(rollout.token_tensor(&self.device)).map_err(failed)?; // [1, C+1, h, w, c]
        let pixels = frames_to_u8(video);
        let fb = self.info.frame.frame_bytes();
        let newest = pixels[context * fb..(context + 1) * fb].to_vec();
        session.tokens.extend_from_slice(&rollout.tokens[context * n..(context + 1) * n]);
        session.steps += 1;
        Frame::new(self.info.frame, newest)
    }
}

/// A model failure as [`ModelError::Failed`].
fn failed(e: impl std::fmt::Display) -> ModelError {
    ModelError::Failed(e.to_string())
}

/// The page's buttons (see [`super::action_keys`]): latent codes named by the recorded action
/// they co-occur with in `data` (when it records actions), or the recorded actions by name.
fn action_buttons(
    genie: &Genie,
    data: Option<&Path>,
    frame: FrameShape,
    trained: usize,
    device: &Device,
) -> anyhow::Result<Vec<ActionInfo>> {
    let k = genie.action_table().dims()[0];
    let names = data.map(recorded_action_names).unwrap_or_default();
    if genie.lam.is_none() {
        let names = if names.len() == k { names } else { (0..k).map(|i| i.to_string()).collect() };
        return Ok(recorded_buttons(&names));
    }
    let counts = match data {
        Some(d) => data_code_counts(genie, d, frame, trained, device)?,
        None => None,
    };
    if let Some(counts) = &counts {
        let buttons = latent_buttons(Some(counts), k, &names);
        // The share and count behind each name, so a user can judge it.
        let partners = code_partners(counts, k);
        let named: Vec<String> = buttons
            .iter()
            .zip(&partners)
            .map(|(b, p)| match p {
                Some(p) => format!("{} = {}: {:.0}% of {}", b.id, b.label, 100.0 * p.share, p.transitions),
                None => format!("{} = {}: unseen", b.id, b.label),
            })
            .collect();
        eprintln!("latent actions, named by the recorded actions they co-occur with: {}", named.join(", "));
    }
    Ok(latent_buttons(counts.as_deref(), k, &names))
}

/// How often each LAM code met each recorded action in the first split of `data` (train,
/// val, test; see [`lam_code_counts`]); `None` when the data record no single action per frame.
fn data_code_counts(
    genie: &Genie,
    data: &Path,
    frame: FrameShape,
    trained: usize,
    device: &Device,
) -> anyhow::Result<Option<Vec<Vec<usize>>>> {
    let Some(split) = ["train", "val", "test"]
        .iter()
        .map(|s| data.join(s))
        .find(|d| jinn_data::dataset::has_record_files(d))
    else {
        return Ok(None);
    };
    lam_code_counts(genie, &split, frame, trained, device).with_context(|| {
        format!("--data {}: pairing the LAM's codes with the actions of {}", data.display(), split.display())
    })
}

/// Names of the recorded actions of `data`: the built-in game's or CoinRun's when the
/// dataset's metadata names one, else none.
fn recorded_action_names(data: &Path) -> Vec<String> {
    jinn_data::metadata::DatasetMetadata::load(&data.join("metadata.json"))
        .ok()
        .and_then(|m| jinn_data::metadata::action_names(&m.env, m.num_actions))
        .unwrap_or_default()
}

/// The splits under `data` whose frames have the model's shape.
fn list_splits(data: &Path, frame: FrameShape) -> anyhow::Result<Vec<SplitInfo>> {
    let mut splits = Vec::new();
    for name in ["train", "val", "test"] {
        let dir = data.join(name);
        // Jasmine's generators leave an empty folder for a split of no episodes.
        if !jinn_data::dataset::has_record_files(&dir) {
            continue;
        }
        let ds = Dataset::open_for_model(&dir, 1, frame)
            .with_context(|| format!("--data {}: opening split '{name}'", data.display()))?;
        splits.push(SplitInfo { name: name.to_string(), episodes: ds.records().len() });
    }
    if splits.is_empty() {
        anyhow::bail!("--data {}: no train/, val/ or test/ split found", data.display());
    }
    Ok(splits)
}

#[cfg(test)]
mod tests;
