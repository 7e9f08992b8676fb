//! Open play sessions: each holds the model's state, every frame shown so far and the states
//! before recent steps (for undo). Limits on their number, length and idle time.

use crate::error::ApiError;
use crate::model::{Frame, WorldState};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Server limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most sessions open at once; creating another gives 429.
    pub max_sessions: usize,
    /// Sessions unused this long are closed by the reaper.
    pub idle_timeout: Duration,
    /// Largest request body in bytes (uploaded PNGs); larger gives 413.
    pub max_body_bytes: usize,
    /// Most frames one session keeps (start frames included); a step beyond gives 409.
    pub max_frames: usize,
    /// Most steps that can be undone in a row.
    pub max_undo: usize,
    /// Longest text-generation prompt in bytes.
    pub max_prompt_bytes: usize,
    /// Most tokens one generation request may ask for.
    pub max_new_tokens: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 16,
            idle_timeout: Duration::from_secs(600),
            max_body_bytes: 8 << 20,
            max_frames: 10_000,
            max_undo: 100,
            max_prompt_bytes: 16 << 10,
            max_new_tokens: 2048,
        }
    }
}

/// One play session.
pub struct Session {
    /// The model's state after the last frame.
    pub state: WorldState,
    /// Every frame so far, `[H, W, C]` each: the start frames, then one per step.
    pub frames: Vec<Frame>,
    /// States before the most recent steps, newest last (at most `max_undo`).
    pub undo: VecDeque<WorldState>,
}

/// A session and when it was last used.
pub struct Entry {
    session: Mutex<Session>,
    last_used: Mutex<Instant>,
}

impl Entry {
    /// Lock the session. A poisoned lock (the model panicked mid-step) gives 500.
    pub fn lock(&self) -> Result<MutexGuard<'_, Session>, ApiError> {
        self.session.lock().map_err(|_| {
            ApiError::internal("this session broke (the model panicked); delete it and start another")
        })
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(*self.last_used.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// All open sessions, by id.
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Entry>>>,
    max_sessions: usize,
}

impl Sessions {
    /// No sessions, at most `max_sessions`.
    pub fn new(max_sessions: usize) -> Self {
        Sessions { map: Mutex::new(HashMap::new()), max_sessions }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        // The map's critical sections cannot panic half-way; recover from poisoning anyway.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of open sessions.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// 429 when the limit is reached (checked before the expensive start, and again at insert).
    pub fn check_capacity(&self) -> Result<(), ApiError> {
        let n = self.len();
        if n >= self.max_sessions {
            return Err(too_many(n));
        }
        Ok(())
    }

    /// Add a session under a fresh random id and return the id.
    pub fn insert(&self, session: Session) -> Result<String, ApiError> {
        let entry = Arc::new(Entry { session: Mutex::new(session), last_used: Mutex::new(Instant::now()) });
        let mut map = self.map();
        if map.len() >= self.max_sessions {
            return Err(too_many(map.len()));
        }
        let id = loop {
            let id = format!("{:032x}", rand::random::<u128>());
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(id.clone(), entry);
        Ok(id)
    }

    /// The session `id` (marking it used), or 404.
    pub fn get(&self, id: &str) -> Result<Arc<Entry>, ApiError> {
        let entry = self.map().get(id).cloned().ok_or_else(|| unknown(id))?;
        entry.touch();
        Ok(entry)
    }

    /// Close session `id`, or 404.
    pub fn remove(&self, id: &str) -> Result<(), ApiError> {
        self.map().remove(id).map(|_| ()).ok_or_else(|| unknown(id))
    }

    /// Close sessions idle for longer than `timeout`; returns how many.
    pub fn reap(&self, timeout: Duration) -> usize {
        let now = Instant::now();
        let mut map = self.map();
        let before = map.len();
        map.retain(|_, e| e.idle_for(now) <= timeout);
        before - map.len()
    }
}

fn too_many(n: usize) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        format!("{n} sessions are open, the limit; delete one or wait for idle ones to expire"),
    )
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!("no session \"{id}\" (closed, expired after being idle, or never created)"))
}
