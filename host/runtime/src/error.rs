//! The runtime's one error type: every message says what was wrong, with which value, and what to
//! do.

use cudarc::driver::DriverError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no NVIDIA driver found (libcuda could not be loaded): run on a machine with an NVIDIA GPU, or on the CPU emulator"
    )]
    NoDriver,
    #[error("no CUDA device {requested}: this machine has {available}; pick another (or set $PTXKIT_DEVICE)")]
    NoSuchDevice { requested: usize, available: usize },
    #[error("device selection '{value}' (from {source_name}) is not a device number")]
    BadDeviceSelection { value: String, source_name: &'static str },
    #[error(
        "{named} was named, but the backend chosen is the CPU emulator, which has no devices: name no device (and unset ${}), or choose the GPU backend",
        crate::gpu::DEVICE_ENV
    )]
    DeviceOnEmulator { named: String },
    #[error(
        "no PTX of kernel crate {krate} runs on compute capability {major}.{minor}: it is built for {built}; add the architecture to its builder (PtxBuilder::arch)"
    )]
    NoPtxForDevice {
        krate: &'static str,
        major: i32,
        minor: i32,
        built: String,
    },
    #[error(
        "the driver cannot load the {arch} PTX of {module} (PTX ISA {isa}): {source}.{}",
        if log.is_empty() { format!(" PTX ISA {isa} needs a driver for CUDA 12.{} or newer; update the NVIDIA driver", isa.strip_prefix("8.").unwrap_or("0")) } else { format!(" The driver's JIT said:\n{log}") }
    )]
    PtxLoad {
        module: String,
        arch: &'static str,
        isa: String,
        log: String,
        source: DriverError,
    },
    #[error(
        "kernel {entry} is in no module loaded on this GPU under the name {module} (loaded: {}): load its crate's PTX with Gpu::load::<T>(), T being the type ptxkit_runtime::include_kernels! defines for it",
        if loaded.is_empty() { "none" } else { loaded.as_str() }
    )]
    NotLoaded {
        entry: String,
        module: String,
        loaded: String,
    },
    #[error(
        "module {module} has no kernel {entry}: its PTX is older than the code (rebuild), or the kernel is left out of the nvptx64 build (a cfg)"
    )]
    NoEntry { entry: String, module: String },
    #[error(
        "kernel {entry} is defined by both modules {modules}: launch it through its crate (Backend::launch) instead of by name"
    )]
    Ambiguous { entry: String, modules: String },
    #[error("CUDA call failed while {doing}: {source}")]
    Driver { doing: String, source: DriverError },
    #[error("{library} failed while {doing}: {message}")]
    Library {
        library: &'static str,
        doing: String,
        message: String,
    },
    #[error(transparent)]
    InvalidSize(#[from] ptxkit::InvalidSize),
    #[error("invalid input to {what}: {reason}")]
    InvalidInput { what: String, reason: String },
    #[error("{reason}")]
    WrongMemory { reason: String },
    #[error("{what} is not available here: {reason}")]
    Unavailable { what: String, reason: String },
    #[error(
        "{entry} uses Hopper's architecture-specific instructions (wgmma): it runs only on a GPU of compute capability 9.0 (H100, H200), from the sm_90a PTX, and {backend} has not that"
    )]
    NeedsSm90a { entry: String, backend: String },
    #[error("{what} needs a GPU: {why}. Run it on a machine with an NVIDIA GPU")]
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
    SharedMemoryTooLarge { kernel: String, needed: u32, limit: u32 },
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
    Emulator(#[from] ptxkit::emu::EmuError),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Wraps a driver error with what the runtime was doing.
pub trait Doing<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Doing<T> for std::result::Result<T, DriverError> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Driver { doing: what(), source })
    }
}
