//! `--device`: which Burn backend, and which adapter of it, a command computes on.
//!
//! `cpu` (the default) is Burn's pure-Rust flex backend and always available. `wgpu` (Vulkan,
//! Metal, WebGPU) and `cuda` need the binary built with `--features wgpu` / `--features cuda`;
//! asking for them otherwise is an error that says how to rebuild. `wgpu:local` / `cuda:local`
//! pick the GPU numbered by the process's node-local rank under an MPI launcher (one GPU per
//! rank with one command line: `mpirun -np 8 jinn train … --device wgpu:local`).

use burn::tensor::{Device, DeviceKind};
use std::fmt;
use std::str::FromStr;

/// The `--device` flag, flattened into every command that runs a model.
#[derive(clap::Args, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceArgs {
    /// Compute device: cpu, wgpu, wgpu:N, wgpu:integrated, wgpu:cpu, wgpu:local, cuda[:N].
    ///
    /// cpu: Burn's flex backend with jinn's CPU kernels. wgpu (build with --features wgpu):
    /// bare `wgpu` is the adapter wgpu picks (a high-power GPU first; CUBECL_WGPU_DEFAULT_DEVICE
    /// overrides it), not necessarily discrete GPU 0 (that is `wgpu:0`); `wgpu:N` the N-th
    /// discrete GPU; `wgpu:integrated` the integrated GPU; `wgpu:cpu` a software adapter such as
    /// Mesa's lavapipe; `wgpu:local` the discrete GPU numbered by the MPI local rank
    /// (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID). cuda[:N] and cuda:local
    /// need --features cuda.
    #[arg(long = "device", value_name = "DEVICE", default_value = "cpu")]
    pub spec: DeviceSpec,
}

impl DeviceArgs {
    /// The Burn device (without autodiff; call `.autodiff()` to train on it).
    pub fn device(&self) -> Device {
        self.spec.device()
    }
}

impl fmt::Display for DeviceArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.spec.fmt(f)
    }
}

/// A device named on the command line. Parsing checks the syntax and that this binary was
/// built with the backend; [`DeviceSpec::device`] then makes the Burn device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    /// Burn's flex CPU backend.
    #[default]
    Cpu,
    /// An adapter of the wgpu backend.
    Wgpu(WgpuAdapter),
    /// The CUDA GPU with index `N` (`cuda:N`; bare `cuda` is GPU 0).
    Cuda(usize),
}

/// Which wgpu adapter `--device wgpu…` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WgpuAdapter {
    /// `wgpu`: the adapter wgpu's heuristics pick (high-power GPUs first).
    Default,
    /// `wgpu:N` (and `wgpu:local`): the `N`-th discrete GPU.
    Discrete(usize),
    /// `wgpu:integrated`: the first integrated GPU.
    Integrated,
    /// `wgpu:cpu`: a software adapter (e.g. Mesa's lavapipe).
    Software,
}

impl WgpuAdapter {
    /// Burn's selector for this adapter.
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))] // only a wgpu build makes the device
    pub fn kind(self) -> DeviceKind {
        match self {
            WgpuAdapter::Default => DeviceKind::DefaultDevice,
            WgpuAdapter::Discrete(i) => DeviceKind::DiscreteGpu(i),
            WgpuAdapter::Integrated => DeviceKind::IntegratedGpu(0),
            WgpuAdapter::Software => DeviceKind::Cpu,
        }
    }
}

impl DeviceSpec {
    /// The Burn device (without autodiff; call `.autodiff()` to train on it).
    pub fn device(self) -> Device {
        match self {
            DeviceSpec::Cpu => Device::flex(),
            #[cfg(feature = "wgpu")]
            DeviceSpec::Wgpu(adapter) => Device::wgpu(adapter.kind()),
            #[cfg(feature = "cuda")]
            DeviceSpec::Cuda(i) => Device::cuda(i),
            // Parsing refuses backends this binary lacks; only code can build such a spec.
            #[allow(unreachable_patterns)]
            other => unreachable!("device {other}: this jinn binary was built without its backend"),
        }
    }
}

impl fmt::Display for DeviceSpec {
    /// The `--device` value that names this device again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Wgpu(WgpuAdapter::Default) => write!(f, "wgpu"),
            DeviceSpec::Wgpu(WgpuAdapter::Discrete(i)) => write!(f, "wgpu:{i}"),
            DeviceSpec::Wgpu(WgpuAdapter::Integrated) => write!(f, "wgpu:integrated"),
            DeviceSpec::Wgpu(WgpuAdapter::Software) => write!(f, "wgpu:cpu"),
            DeviceSpec::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = String;

    /// See [`parse`]; `local` reads the launcher's variables from the environment.
    fn from_str(s: &str) -> Result<Self, String> {
        parse(s, &|var| std::env::var(var).ok())
    }
}

/// The accepted `--device` values, as error messages list them.
const FORMS: &str = "cpu, wgpu, wgpu:N, wgpu:integrated, wgpu:cpu, wgpu:local, cuda, cuda:N or cuda:local";

/// Variables in which MPI launchers (OpenMPI, MPICH/Hydra, Slurm) give a process its rank
/// among the processes on its node.
const LOCAL_RANK_VARS: [&str; 3] = ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"];

/// What follows `wgpu` / `cuda`.
enum Suffix {
    None,
    Index(usize),
    Local,
    Integrated,
    Software,
}

/// Parse a `--device` value (case-insensitive; see [`FORMS`]), reading environment variables
/// through `env`. Syntax errors come before a missing backend, which comes before a missing
/// MPI local rank.
fn parse(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<DeviceSpec, String> {
    let lower = s.trim().to_ascii_lowercase();
    let unknown = || format!("unknown device '{s}': --device takes {FORMS}");
    let (name, suffix) = match lower.split_once(':') {
        Some((name, suffix)) => (name, Some(suffix)),
        None => (lower.as_str(), None),
    };
    let (feature, compiled_in) = match name {
        "cpu" if suffix.is_none() => return Ok(DeviceSpec::Cpu),
        "wgpu" => ("wgpu", cfg!(feature = "wgpu")),
        "cuda" => ("cuda", cfg!(feature = "cuda")),
        _ => return Err(unknown()),
    };
    let suffix = match suffix {
        None => Suffix::None,
        Some("local") => Suffix::Local,
        Some("integrated") if name == "wgpu" => Suffix::Integrated,
        Some("cpu") if name == "wgpu" => Suffix::Software,
        Some(i) => Suffix::Index(i.parse().map_err(|_| unknown())?),
    };
    if !compiled_in {
        return Err(format!(
            "device '{s}' needs the {feature} backend, which this jinn binary was built without; \
             rebuild with `cargo build --release -p jinn --features {feature}` or use --device cpu"
        ));
    }
    let index = |suffix: Suffix| match suffix {
        Suffix::Local => local_rank(s, env),
        Suffix::Index(i) => Ok(i),
        _ => Ok(0),
    };
    Ok(match (name, suffix) {
        ("wgpu", Suffix::None) => DeviceSpec::Wgpu(WgpuAdapter::Default),
        ("wgpu", Suffix::Integrated) => DeviceSpec::Wgpu(WgpuAdapter::Integrated),
        ("wgpu", Suffix::Software) => DeviceSpec::Wgpu(WgpuAdapter::Software),
        ("wgpu", suffix) => DeviceSpec::Wgpu(WgpuAdapter::Discrete(index(suffix)?)),
        (_, suffix) => DeviceSpec::Cuda(index(suffix)?),
    })
}

/// Checks a `--device` value as [`parse`] does, except that `local` is left for each rank of a
/// launch to resolve: what a command that starts the ranks itself checks before handing the value
/// on.
#[cfg(any(feature = "mpi", test))] // `jinn bench mpi` starts ranks
pub fn check_for_ranks(s: &str) -> Result<(), String> {
    parse(s, &|var| (var == LOCAL_RANK_VARS[0]).then(|| "0".to_string())).map(|_| ())
}

/// This process's node-local rank under an MPI launcher: the first of [`LOCAL_RANK_VARS`] set.
fn local_rank(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<usize, String> {
    let Some((var, value)) = LOCAL_RANK_VARS.iter().find_map(|&v| Some((v, env(v)?))) else {
        return Err(format!(
            "device '{s}' numbers the GPU by the MPI local rank, but none of {} is set: launch \
             under mpirun or srun, or name the GPU (e.g. --device wgpu:0)",
            LOCAL_RANK_VARS.join(", ")
        ));
    };
    value.trim().parse().map_err(|_| format!("device '{s}': {var}={value} is not a local rank"))
}

#[cfg(test)]
mod tests;
