//! `--device cpu|wgpu[:N]|cuda[:N]`: which Burn backend a command computes on.
//!
//! `cpu` (the default) is Burn's pure-Rust flex backend and always available. `wgpu` (Vulkan,
//! Metal, WebGPU) and `cuda` need the binary built with `--features wgpu` / `--features cuda`;
//! asking for them otherwise is an error that says how to rebuild. `wgpu:local` / `cuda:local`
//! pick the GPU numbered by the process's node-local rank under an MPI launcher (one GPU per
//! rank with one command line: `mpirun -np 8 jinn train … --device wgpu:local`).

use burn::tensor::Device;
use std::fmt;
use std::str::FromStr;

/// A device named on the command line. Parsing checks the syntax and that this binary was
/// built with the backend; [`DeviceSpec::device`] then makes the Burn device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    /// Burn's flex CPU backend.
    #[default]
    Cpu,
    /// The `N`-th discrete GPU through wgpu (`wgpu:N`; bare `wgpu` is GPU 0).
    Wgpu(usize),
    /// The CUDA GPU with index `N` (`cuda:N`; bare `cuda` is GPU 0).
    Cuda(usize),
}

impl DeviceSpec {
    /// The Burn device (without autodiff; call `.autodiff()` to train on it).
    pub fn device(self) -> Device {
        match self {
            DeviceSpec::Cpu => Device::flex(),
            #[cfg(feature = "wgpu")]
            DeviceSpec::Wgpu(i) => Device::wgpu(burn::tensor::DeviceKind::DiscreteGpu(i)),
            #[cfg(feature = "cuda")]
            DeviceSpec::Cuda(i) => Device::cuda(i),
            // Parsing refuses backends this binary lacks, so a spec naming one cannot exist
            // unless built by hand; fall back to the CPU rather than panic.
            #[allow(unreachable_patterns)]
            _ => Device::flex(),
        }
    }

    /// Whether this binary was built with the backend's cargo feature.
    pub fn is_compiled_in(self) -> bool {
        match self {
            DeviceSpec::Cpu => true,
            DeviceSpec::Wgpu(_) => cfg!(feature = "wgpu"),
            DeviceSpec::Cuda(_) => cfg!(feature = "cuda"),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Wgpu(i) => write!(f, "wgpu:{i}"),
            DeviceSpec::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = String;

    /// `cpu`, `wgpu`, `wgpu:N`, `wgpu:local`, `cuda`, `cuda:N`, `cuda:local`
    /// (case-insensitive). Used directly as a clap value type: `#[arg(long, default_value =
    /// "cpu")] device: DeviceSpec`.
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.trim().to_ascii_lowercase();
        let (name, index) = match lower.split_once(':') {
            Some((n, "local")) => (n, local_rank()),
            Some((n, i)) => {
                let index = i.parse::<usize>().map_err(|_| {
                    format!("device '{s}': the index after ':' must be a GPU number such as 0, got '{i}'")
                })?;
                (n, index)
            }
            None => (lower.as_str(), 0),
        };
        let spec = match name {
            "cpu" if !lower.contains(':') => DeviceSpec::Cpu,
            "wgpu" => DeviceSpec::Wgpu(index),
            "cuda" => DeviceSpec::Cuda(index),
            _ => return Err(format!("unknown device '{s}': expected cpu, wgpu:N or cuda:N (e.g. wgpu:0)")),
        };
        if !spec.is_compiled_in() {
            let feature = if matches!(spec, DeviceSpec::Wgpu(_)) { "wgpu" } else { "cuda" };
            return Err(format!(
                "device '{s}' needs the {feature} backend, which this jinn binary was built without; \
                 rebuild with `cargo build --release -p jinn --features {feature}` or use --device cpu"
            ));
        }
        Ok(spec)
    }
}

/// Variables in which MPI launchers (OpenMPI, MPICH/Hydra, Slurm) give a process its rank
/// among the processes on its node.
const LOCAL_RANK_VARS: [&str; 3] = ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"];

/// This process's node-local rank under an MPI launcher; 0 otherwise.
fn local_rank() -> usize {
    LOCAL_RANK_VARS.iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_explains_bad_ones() {
        assert_eq!("cpu".parse::<DeviceSpec>(), Ok(DeviceSpec::Cpu));
        assert_eq!(" CPU ".parse::<DeviceSpec>(), Ok(DeviceSpec::Cpu));
        for bad in ["gpu", "cpu:0", "", "tpu:1"] {
            let e = bad.parse::<DeviceSpec>().unwrap_err();
            assert!(e.contains("expected cpu, wgpu:N or cuda:N"), "{bad}: {e}");
        }
        let e = "wgpu:x".parse::<DeviceSpec>().unwrap_err();
        assert!(e.contains("GPU number") && e.contains("'x'"), "{e}");
        assert_eq!(DeviceSpec::Wgpu(3).to_string(), "wgpu:3");
        assert!("cpu".parse::<DeviceSpec>().map(DeviceSpec::device).is_ok());
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_parses_with_its_feature() {
        assert_eq!("wgpu:1".parse::<DeviceSpec>(), Ok(DeviceSpec::Wgpu(1)));
        assert_eq!("wgpu".parse::<DeviceSpec>(), Ok(DeviceSpec::Wgpu(0)));
    }

    #[cfg(not(feature = "wgpu"))]
    #[test]
    fn wgpu_without_its_feature_says_how_to_rebuild() {
        let e = "wgpu:0".parse::<DeviceSpec>().unwrap_err();
        assert!(e.contains("--features wgpu") && e.contains("wgpu:0"), "{e}");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_its_feature_says_how_to_rebuild() {
        let e = "cuda:1".parse::<DeviceSpec>().unwrap_err();
        assert!(e.contains("--features cuda"), "{e}");
        // `local` is understood as an index (the missing backend is the complaint).
        let e = "cuda:local".parse::<DeviceSpec>().unwrap_err();
        assert!(e.contains("--features cuda"), "{e}");
        assert!("cpu:local".parse::<DeviceSpec>().unwrap_err().contains("expected cpu"));
    }
}
