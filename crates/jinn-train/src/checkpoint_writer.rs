//! Writing checkpoints off the training thread.
//!
//! The training thread only takes a [`snapshot`](crate::checkpoint::snapshot) (the device →
//! host copy); a writer thread does the file I/O, fsyncs and retention. At most one
//! snapshot waits in the queue, so memory stays bounded at two host copies: a second
//! [`CheckpointWriter::submit`] blocks until the first is on disk. A failed write stops the
//! writer; the error comes back from the next `submit` or from [`CheckpointWriter::finish`].

use crate::checkpoint::{apply_retention, write_checkpoint, CheckpointData};
use crate::error::{Result, TrainError};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// A background checkpoint writer for one run directory.
pub struct CheckpointWriter {
    tx: Option<SyncSender<CheckpointData>>,
    handle: Option<JoinHandle<Result<()>>>,
}

impl CheckpointWriter {
    /// Start the writer thread for `run_dir`, applying retention (`keep_last`, `keep_every`)
    /// after each write.
    pub fn spawn(run_dir: PathBuf, keep_last: usize, keep_every: u64) -> Result<CheckpointWriter> {
        let (tx, rx) = sync_channel::<CheckpointData>(1);
        let handle = std::thread::Builder::new()
            .name("jinn-checkpoint".into())
            .spawn(move || -> Result<()> {
                for data in rx {
                    write_checkpoint(&run_dir, &data)?;
                    apply_retention(&run_dir, keep_last, keep_every)?;
                }
                Ok(())
            })
            .map_err(|e| TrainError::io("<checkpoint writer thread>", e))?;
        Ok(CheckpointWriter { tx: Some(tx), handle: Some(handle) })
    }

    /// Queue a snapshot for writing (blocks while another one is still queued). If the
    /// writer has stopped on an error, that error is returned.
    pub fn submit(&mut self, data: CheckpointData) -> Result<()> {
        let tx = self.tx.as_ref().expect("sender present until finish");
        if tx.send(data).is_err() {
            self.tx = None;
            return self.join();
        }
        Ok(())
    }

    /// Wait for every queued checkpoint to be on disk; returns the writer's first error.
    pub fn finish(mut self) -> Result<()> {
        self.tx = None;
        self.join()
    }

    fn join(&mut self) -> Result<()> {
        match self.handle.take() {
            Some(h) => match h.join() {
                Ok(r) => r,
                Err(_) => {
                    Err(TrainError::checkpoint("<checkpoint writer thread>", "the writer thread panicked"))
                }
            },
            None => {
                Err(TrainError::checkpoint("<checkpoint writer thread>", "the writer has already stopped"))
            }
        }
    }
}

impl Drop for CheckpointWriter {
    /// Waits for queued writes so a checkpoint is never abandoned half-written by a normal
    /// exit; errors at this point can only be logged.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            if let Ok(Err(e)) = h.join() {
                tracing::error!("background checkpoint write failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{latest_good, list_steps, TrainState};

    fn data(step: u64) -> CheckpointData {
        CheckpointData {
            model: vec![1, 2, 3],
            optimizer: vec![4, 5],
            state: TrainState {
                step,
                model_kind: "k".into(),
                config: serde_json::json!({}),
                seed: 0,
                loader: None,
                val_loader: None,
                metrics_head: vec![],
                extra: Default::default(),
            },
        }
    }

    #[test]
    fn writes_in_background_with_retention() {
        let run = tempfile::tempdir().unwrap();
        let mut w = CheckpointWriter::spawn(run.path().to_path_buf(), 2, 4).unwrap();
        for step in 1..=6 {
            w.submit(data(step)).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(list_steps(run.path()).unwrap(), vec![4, 5, 6]);
        assert_eq!(latest_good(run.path()).unwrap().checkpoint.unwrap().state.step, 6);
    }

    #[test]
    fn a_failed_write_is_reported() {
        let run = tempfile::tempdir().unwrap();
        let file = run.path().join("not_a_dir");
        std::fs::write(&file, b"x").unwrap();
        let mut w = CheckpointWriter::spawn(file, 3, 0).unwrap();
        let first = w.submit(data(1));
        let outcome = match first {
            Err(e) => Err(e),
            Ok(()) => w.finish(),
        };
        assert!(outcome.unwrap_err().to_string().contains("not_a_dir"));
    }
}
