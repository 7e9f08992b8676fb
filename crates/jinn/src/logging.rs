//! Log setup: `tracing` to stderr, level from `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

/// Install the global subscriber.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_writer(std::io::stderr).init();
}
