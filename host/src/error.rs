//! The host's one error type: every message says what was wrong, with which value, and what to do.

use cudarc::driver::DriverError;
use kernels::Source;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "no NVIDIA driver found (libcuda could not be loaded): run on a machine with an NVIDIA GPU, or use --backend emu"
    )]
    NoDriver,
    #[error("no CUDA device {requested}: this machine has {available}; pick one with --device or $KERNELS_DEVICE")]
    NoSuchDevice { requested: usize, available: usize },
    #[error("device selection '{value}' (from {source_name}) is not a device number")]
    BadDeviceSelection { value: String, source_name: &'static str },
    #[error(
        "no embedded PTX runs on compute capability {major}.{minor}: the PTX is built for {built}; add the arch to xtask::DEFAULT_ARCHS"
    )]
    NoPtxForDevice { major: i32, minor: i32, built: String },
    #[error(
        "the driver cannot load the {arch} PTX (PTX ISA {isa}): {source}. This PTX needs a driver for CUDA 12.0 or newer; update the NVIDIA driver"
    )]
    PtxLoad {
        arch: &'static str,
        isa: String,
        source: DriverError,
    },
    #[error("CUDA call failed while {doing}: {source}")]
    Driver { doing: String, source: DriverError },
    #[error("cuBLAS failed while {doing}: {message}")]
    Cublas { doing: String, message: String },
    #[error("{library} failed while {doing}: {message}")]
    Library {
        library: &'static str,
        doing: String,
        message: String,
    },
    #[error(transparent)]
    InvalidSize(#[from] kernels::InvalidSize),
    #[error("invalid input to {what}: {reason}")]
    InvalidInput { what: String, reason: String },
    #[error("{reason}")]
    WrongMemory { reason: String },
    #[error(
        "{entry} from {compiled_from} is not available on this backend: CUDA C runs only on a GPU, with --cuda-c DIR pointing at nvcc-made PTX of benches/reference/cuda_c"
    )]
    SourceUnavailable { entry: &'static str, compiled_from: Source },
    #[error(
        "{entry} uses Hopper's architecture-specific instructions (wgmma): it runs only on a GPU of compute capability 9.0 (H100, H200), from the sm_90a PTX, and {backend} has not that"
    )]
    NeedsSm90a { entry: &'static str, backend: String },
    #[error("{what} needs a GPU: {why}. Run it on a machine with an NVIDIA GPU (--backend gpu)")]
    NeedsGpu { what: String, why: &'static str },
    #[error(
        "{what} needs about {needed_mib} MiB of {memory}, but only {available_mib} MiB is available: choose a smaller size"
    )]
    TooLarge {
        what: String,
        memory: &'static str,
        needed_mib: u64,
        available_mib: u64,
    },
    #[error("{kernel} needs {needed} bytes of shared memory per block, but this device allows at most {limit}")]
    SharedMemoryTooLarge {
        kernel: &'static str,
        needed: u32,
        limit: u32,
    },
    #[error(
        "a managed allocation of {requested} bytes exceeds the device's free memory ({free} bytes): oversubscribing managed memory can hang the GPU. Use a smaller size, or opt in with ManagedBuffer::new_oversubscribed"
    )]
    ManagedOversubscription { requested: usize, free: usize },
    #[error(
        "managed buffer still in use by GPU work that has not finished: call wait() (or read()) before touching it on the CPU"
    )]
    ManagedBusy,
    #[error("cannot write {path}: {source}")]
    Output {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Emulator(#[from] kernels::emu::EmuError),
}

pub type Result<T> = std::result::Result<T, HostError>;

/// Wraps a driver error with what the host was doing.
pub(crate) trait Doing<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Doing<T> for std::result::Result<T, DriverError> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| HostError::Driver { doing: what(), source })
    }
}
