//! Episodes for jinn: everything between recorded video + actions and a batch of `u8` frames.
//!
//! - [`array_record`]: ArrayRecord files (Riegeli container + footer index), random access.
//! - [`pickle`]: a safe pickle codec for exactly Jasmine's record dict.
//! - [`episode`]: the record type ([`EpisodeRecord`]) shared by every reader and writer.
//! - [`dataset`], [`loader`]: a sorted, indexed dataset directory and the resumable, sharded,
//!   prefetching batch loader.
//! - [`envs`], [`generate`]: built-in games and the split/chunk writer behind `jinn data gen`.
//! - [`import`]: videos (ffmpeg) and PNG folders into episodes.
//! - [`metrics`], [`gif_writer`], [`font`]: PSNR/SSIM and labelled animated GIFs.
//!
//! This crate needs no deep-learning framework: it deals in bytes, frames and actions.

pub mod array_record;
pub mod atomic_file;
pub mod dataset;
pub mod envs;
pub mod episode;
pub mod error;
pub mod font;
pub mod generate;
pub mod gif_writer;
pub mod import;
pub mod loader;
pub mod metadata;
pub mod metrics;
pub mod objects;
pub mod output_dir;
pub mod pickle;
pub mod rng;
pub mod split_writer;

pub use episode::{ActionArray, ActionDtype, EpisodeRecord, FrameShape};
pub use error::{DataError, Result};
