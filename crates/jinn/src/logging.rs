//! Log setup: `tracing` to stderr, level from `RUST_LOG` (default [`DEFAULT_FILTER`]).

use tracing_subscriber::EnvFilter;

/// `info` for jinn, `warn` for the GPU stack: Burn's kernel autotuner (`cubecl_runtime`) logs
/// one INFO line per tuned shape and wgpu logs adapter chatter, which a user did not ask for.
/// wgpu's OpenGL layer is off: probing it on a machine without a display logs an EGL error on
/// every start although jinn never computes on OpenGL.
/// `RUST_LOG` replaces the whole filter (e.g. `RUST_LOG=info` shows them again).
pub const DEFAULT_FILTER: &str = "info,cubecl=warn,cubecl_runtime=warn,cubecl_wgpu=warn,wgpu=warn,\
                                  wgpu_core=warn,wgpu_hal=warn,wgpu_hal::gles=off,naga=warn";

/// Install the global subscriber.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_writer(std::io::stderr).init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer that keeps what is written.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_default_filter_hides_autotune_chatter_but_not_jinn_or_gpu_warnings() {
        let out = Capture::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_FILTER))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "cubecl_runtime::tune::tuner", "Tuning matmul-key");
            tracing::info!(target: "wgpu_core::instance", "Adapter Vulkan");
            tracing::error!(target: "wgpu_hal::gles::egl", "EGL 'eglInitialize' code 0x3001");
            tracing::warn!(target: "cubecl_runtime::tune::tuner", "autotune failed");
            tracing::info!(target: "jinn::train", "training 10 steps");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("Tuning matmul-key") && !text.contains("Adapter Vulkan"), "{text}");
        assert!(!text.contains("eglInitialize"), "{text}");
        assert!(text.contains("autotune failed") && text.contains("training 10 steps"), "{text}");
    }
}
