//! A trained Genie (tokenizer + action source + dynamics) as a [`WorldModel`] for `jinn play`:
//! each step appends the chosen action and samples the next frame from the last `window`
//! frames' tokens (MaskGIT or causal sampler, KV-cached within the window), then decodes the
//! window and returns its newest frame.

use anyhow::Context;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::dataset::Dataset;
use jinn_data::envs::make_env;
use jinn_data::FrameShape;
use jinn_serve::{ActionInfo, Frame, ModelError, ModelInfo, SplitInfo, StartSource, WorldModel, WorldState};
use jinn_world::{frames_to_unit, load_genie, sample, Genie, SamplerConfig};
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
    /// Action vectors `[A, La]`: the LAM's codebook or the recorded-action embeddings.
    action_table: Tensor<2>,
    /// Frames the dynamics sees at once (at most its training `seq_len`).
    window: usize,
    /// Tokens per frame.
    tokens_per_frame: usize,
    /// Dataset the sessions can start from (`--data`), with its split names.
    data: Option<PathBuf>,
    sampler: SamplerConfig,
    device: Device,
    /// Where the model runs. The server calls [`WorldModel`] from its blocking threads, which
    /// are not rayon threads: every parallel op of a frame would be handed to rayon's global
    /// pool and waited for, and its idle threads would sleep between ops. Inside `pool.install`
    /// the frame runs on a pool thread that works on its own ops, with the other threads kept
    /// awake for the rollout (`WarmPool`). `None` when no pool could be built.
    pool: Option<rayon::ThreadPool>,
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
    /// Load the newest good checkpoint of the dynamics run `run`; `data` is a dataset
    /// directory (with `train/`, `val/`, … splits) to draw start frames from. Each step shows
    /// the dynamics the last `window` frames (default [`DEFAULT_WINDOW`], at most its training
    /// clip length; temporal attention is causal, so a shorter window is a prefix it was
    /// trained on).
    pub fn load(
        run: &Path,
        data: Option<&Path>,
        sampler: SamplerConfig,
        window: Option<usize>,
    ) -> anyhow::Result<Self> {
        let device = Device::flex();
        let (genie, _cfg, step) = load_genie(run, &device)
            .with_context(|| format!("--ckpt {}: loading the world model", run.display()))?;
        let trained = trained_seq_len(run).unwrap_or(DEFAULT_WINDOW).max(2);
        let window = match window {
            None => trained.min(DEFAULT_WINDOW),
            Some(w) if (2..=trained).contains(&w) => w,
            Some(w) => anyhow::bail!(
                "--window {w}: expected 2..={trained} (the dynamics was trained on {trained}-frame clips)"
            ),
        };
        let grid = genie.tokenizer.grid();
        let frame = FrameShape { height: grid.height, width: grid.width, channels: grid.channels };
        let (action_table, actions) = action_table_and_labels(&genie, data)?;
        let splits = match data {
            Some(d) => list_splits(d, frame)?,
            None => Vec::new(),
        };
        let name = format!(
            "{} (step {step}, {:?} dynamics)",
            run.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            genie.dynamics.kind()
        );
        let tokens_per_frame = grid.num_patches();
        let info = ModelInfo { name, frame, actions, max_start_frames: window - 1, splits };
        Ok(GenieWorld {
            genie: Mutex::new(genie),
            info,
            action_table,
            window,
            tokens_per_frame,
            data: data.map(Path::to_path_buf),
            sampler,
            device,
            pool: rayon::ThreadPoolBuilder::new().thread_name(|i| format!("jinn-play-{i}")).build().ok(),
        })
    }

    /// `job` on the model's compute pool (see [`GenieWorld::pool`]).
    fn on_pool<R: Send>(&self, job: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(job),
            None => job(),
        }
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
        let dataset = Dataset::open(&data.join(&split), 1, Some(self.info.frame))
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
        let window = dataset.read_window(r, frame, 1).map_err(|e| ModelError::Failed(e.to_string()))?;
        Ok(vec![Frame::new(self.info.frame, window.frames)?])
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
        let tokens = genie.tokenizer.encode(self.video(frames)).map_err(failed)?; // [1, T, N]
        let tokens: Vec<i64> = tokens.try_into_vec_as::<i64>().map_err(|e| failed(format!("{e:?}")))?;
        // Transitions between uploaded frames are unknown: take action 0 for them.
        let actions = vec![0; frames.len() - 1];
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
        let pixels: Vec<u8> = video
            .try_into_vec_as::<f32>()
            .map_err(|e| failed(format!("{e:?}")))?
            .iter()
            .map(|&v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
            .collect();
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

/// The `data.seq_len` the dynamics run was trained with (its stored config).
fn trained_seq_len(run: &Path) -> Option<usize> {
    let ckpt = jinn_train::checkpoint::latest_good(run).ok()?.checkpoint?;
    ckpt.state.config.get("data")?.get("seq_len")?.as_u64().map(|v| v as usize)
}

/// The action vectors and the page's buttons: latent codes `0..A−1`, or the recorded actions
/// (named after the dataset's built-in game when `data` names one).
fn action_table_and_labels(
    genie: &Genie,
    data: Option<&Path>,
) -> anyhow::Result<(Tensor<2>, Vec<ActionInfo>)> {
    let (table, names): (Tensor<2>, Vec<String>) = match (&genie.lam, &genie.action_embed) {
        (Some(lam), _) => {
            let table = lam.vq.codebook.val();
            let k = table.dims()[0];
            (table, (0..k).map(|i| format!("latent {i}")).collect())
        }
        (None, Some(embed)) => {
            let table = embed.val();
            let k = table.dims()[0];
            (table, recorded_action_names(data, k))
        }
        (None, None) => anyhow::bail!("the model has neither a LAM nor action embeddings"),
    };
    let keys = ["ArrowLeft", "ArrowRight", " ", "ArrowUp", "ArrowDown"];
    let actions = names
        .into_iter()
        .enumerate()
        .map(|(i, label)| ActionInfo {
            id: i as u32,
            label,
            key: keys.get(i).map(|k| k.to_string()),
            description: None,
        })
        .collect();
    Ok((table, actions))
}

/// Names of `k` recorded actions: the built-in game's when the dataset's metadata names one
/// with `k` actions, else their numbers.
fn recorded_action_names(data: Option<&Path>, k: usize) -> Vec<String> {
    let env = data
        .and_then(|d| jinn_data::metadata::DatasetMetadata::load(&d.join("metadata.json")).ok())
        .and_then(|m| make_env(&m.env, FrameShape { height: 64, width: 64, channels: 3 }, 0).ok());
    match env {
        Some(env) if env.num_actions() == k => env.action_names().iter().map(|s| s.to_string()).collect(),
        _ => (0..k).map(|i| i.to_string()).collect(),
    }
}

/// The splits under `data` whose frames have the model's shape.
fn list_splits(data: &Path, frame: FrameShape) -> anyhow::Result<Vec<SplitInfo>> {
    let mut splits = Vec::new();
    for name in ["train", "val", "test"] {
        let dir = data.join(name);
        if !dir.is_dir() {
            continue;
        }
        let ds = Dataset::open(&dir, 1, Some(frame))
            .with_context(|| format!("--data {}: opening split '{name}'", data.display()))?;
        splits.push(SplitInfo { name: name.to_string(), episodes: ds.records().len() });
    }
    if splits.is_empty() {
        anyhow::bail!("--data {}: no train/, val/ or test/ split found", data.display());
    }
    Ok(splits)
}
