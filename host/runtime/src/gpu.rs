//! The GPU: a context on one device, a stream, and the PTX modules loaded on it.

use crate::counters::Counters;
use crate::error::{Doing, Error, Result};
use crate::external::ExternalStream;
use crate::info::DeviceInfo;
use crate::module::LoadedModule;
use crate::scratch::StreamScratch;
use crate::tensor_map::TensorMapCache;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use std::sync::Arc;

/// Environment variable choosing the device where `Gpu::open` is given none.
pub const DEVICE_ENV: &str = "PTXKIT_DEVICE";

/// An open GPU and the PTX modules loaded on it ([`Gpu::load`]). All work runs on one stream, so
/// launches, copies and library calls are ordered.
pub struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Someone else's stream that launches go to instead (`Gpu::on_external_stream`).
    pub(crate) external: Option<ExternalStream>,
    /// Shared with the GPU's external-stream views ([`Gpu::on_external_stream`], made per call
    /// from Python): cloning them is a reference count, not a copy of every kernel's handle.
    pub(crate) modules: Arc<Vec<Arc<LoadedModule>>>,
    pub(crate) info: Arc<DeviceInfo>,
    /// The TMA tensor maps uploaded so far ([`Gpu::tensor_maps`]).
    pub(crate) tensor_map_cache: Arc<TensorMapCache>,
    /// Zeroed counters, per stream ([`Gpu::zeroed_counters`]).
    pub(crate) counters: Arc<Counters>,
    /// Scratch for row-padded copies, per stream ([`Gpu::padded_copies`]).
    pub(crate) padding: Arc<StreamScratch>,
    /// Scratch for partial sums, per stream ([`crate::Backend::partial_sums`]).
    pub(crate) partials: Arc<StreamScratch>,
}

/// Whether this machine has a usable NVIDIA driver and at least one device.
pub fn is_available() -> bool {
    // SAFETY: only tries to load the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return false;
    }
    CudaContext::device_count().map(|n| n > 0).unwrap_or(false)
}

/// The device `$PTXKIT_DEVICE` names, if it is set; an error when it is set to anything but a
/// device number.
pub fn device_from_env() -> Result<Option<usize>> {
    match std::env::var(DEVICE_ENV) {
        Ok(value) => value.trim().parse().map(Some).map_err(|_| Error::BadDeviceSelection {
            value,
            source_name: DEVICE_ENV,
        }),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(value)) => Err(Error::BadDeviceSelection {
            value: value.to_string_lossy().into_owned(),
            source_name: DEVICE_ENV,
        }),
    }
}

/// The device a caller named, `ordinal` or else `$PTXKIT_DEVICE`'s, as a message says it
/// ("device 3 ($PTXKIT_DEVICE)"); none when neither names one. The one rule for every backend: a
/// named device is never silently replaced by the emulator.
pub fn named_device(ordinal: Option<usize>) -> Result<Option<String>> {
    Ok(match ordinal {
        Some(o) => Some(format!("device {o}")),
        None => device_from_env()?.map(|o| format!("device {o} (${DEVICE_ENV})")),
    })
}

impl Gpu {
    /// Opens device `ordinal`, or the one `$PTXKIT_DEVICE` names, or device 0, with no module loaded.
    pub fn open(ordinal: Option<usize>) -> Result<Gpu> {
        let ordinal = match ordinal {
            Some(o) => o,
            None => device_from_env()?.unwrap_or(0),
        };
        // SAFETY: only tries to load the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let available = CudaContext::device_count().doing(|| "counting devices".into())? as usize;
        if ordinal >= available {
            return Err(Error::NoSuchDevice {
                requested: ordinal,
                available,
            });
        }
        let ctx = CudaContext::new(ordinal).doing(|| format!("creating a context on device {ordinal}"))?;
        // One stream orders all work; cudarc's per-buffer event tracking is for several streams.
        // SAFETY: no buffers exist yet.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().doing(|| "creating a stream".into())?;
        let info = DeviceInfo::query(&ctx)?;
        Ok(Gpu {
            ctx,
            stream,
            external: None,
            modules: Arc::default(),
            info: Arc::new(info),
            tensor_map_cache: Arc::default(),
            counters: Arc::default(),
            padding: Arc::default(),
            partials: Arc::default(),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The architecture of the PTX loaded for kernel crate `krate`, e.g. "sm_90a", if loaded.
    pub fn module_arch(&self, krate: &str) -> Option<&'static str> {
        self.loaded(krate).next().and_then(|m| m.arch)
    }

    /// Whether this device runs Hopper's architecture-specific PTX (`sm_90a`: compute
    /// capability 9.0), and so the kernels written with `kernel_sm90a!`.
    pub fn runs_sm90a(&self) -> bool {
        self.info.compute_capability == (9, 0)
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for all work on the stream, reporting any error a kernel raised.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().doing(|| "waiting for the GPU".into())
    }

    /// Copies `host` into a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        self.stream
            .clone_htod(host)
            .doing(|| format!("copying {} elements to the GPU", host.len()))
    }

    /// Copies a device buffer back.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, device: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream
            .clone_dtoh(device)
            .doing(|| format!("copying {} elements from the GPU", device.len()))
    }

    /// Copies `host` into an existing device buffer of the same length.
    pub fn copy_into<T: DeviceRepr>(&self, host: &[T], device: &mut CudaSlice<T>) -> Result<()> {
        self.stream
            .memcpy_htod(host, device)
            .doing(|| format!("copying {} elements to the GPU", host.len()))
    }

    /// A device buffer of `len` zeros.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.stream
            .alloc_zeros(len)
            .doing(|| format!("allocating {len} elements on the GPU"))
    }
}
