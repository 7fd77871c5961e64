//! The GPU: a context on one device, the embedded PTX loaded for its architecture, and a stream.

mod arrivals;
mod cub;
mod cublas;
mod cuda_c;
mod devices;
mod external;
mod info;
mod launch;
mod managed;
mod managed_chunk;
mod nccl;
mod nvml;
mod peer;
mod tensor_map;
mod timing;

pub use cub::{CUB_ENV, Cub};
pub use cublas::{Cublas, Precision};
pub use cuda_c::{CudaC, ENTRY_SUFFIX};
pub use devices::{
    DeviceList, MAX_DEVICES, PeerLink, Topology, TopologyDevice, can_access_peer, enable_peer_access, parse_devices,
};
pub use external::{EXTERNAL_ALIGNMENT, ExternalArray, ExternalStream};
pub use info::{DeviceInfo, KernelOccupancy};
pub use managed::{ManagedBuffer, MemoryLocation};
pub use managed_chunk::ManagedChunk;
pub use nccl::{Clique, NCCL_ENV, NVLS_ENV, Nccl};
pub use nvml::Link;
pub use peer::{CopyBy, PeerView, copy_between, exchange};
pub use tensor_map::{TensorMap, TensorMapCache, bf16_swizzled, bf16_swizzled_stack, f32_swizzled};
pub use timing::{MIN_WARMUP_MS, Timing, time_gpu, time_gpu_interleaved, time_once};

use crate::error::{Doing, HostError, Result};
use crate::ptx::{self, EmbeddedPtx};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use std::collections::HashMap;
use std::sync::Arc;

/// Environment variable choosing the device when no `--device` is given.
pub const DEVICE_ENV: &str = "KERNELS_DEVICE";

/// An open GPU with every registered kernel loaded (and, after [`Gpu::load_cuda_c`], their CUDA C
/// twins). All work runs on one stream, so launches, copies and library calls are ordered.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Someone else's stream that launches go to instead (`Gpu::on_external_stream`).
    external: Option<ExternalStream>,
    /// Shared with the GPU's external-stream views ([`Gpu::on_external_stream`], made per call
    /// from Python): cloning them is a reference count, not a copy of every kernel's handle.
    functions: Arc<HashMap<&'static str, CudaFunction>>,
    cuda_c: Option<CudaC>,
    info: Arc<DeviceInfo>,
    ptx: &'static EmbeddedPtx,
    _module: Arc<CudaModule>,
    /// The TMA tensor maps uploaded so far ([`Gpu::tensor_maps`]).
    tensor_map_cache: Arc<TensorMapCache>,
    /// Split-k's counters, per stream ([`Gpu::split_arrivals`]).
    arrivals: Arc<arrivals::Arrivals>,
}

/// Whether this machine has a usable NVIDIA driver and at least one device.
pub fn is_available() -> bool {
    // SAFETY: only tries to load the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return false;
    }
    CudaContext::device_count().map(|n| n > 0).unwrap_or(false)
}

impl Gpu {
    /// Opens device `ordinal`, or the one `$KERNELS_DEVICE` names, or device 0.
    pub fn open(ordinal: Option<usize>) -> Result<Gpu> {
        let ordinal = match ordinal {
            Some(o) => o,
            None => match std::env::var(DEVICE_ENV) {
                Ok(value) => value.trim().parse().map_err(|_| HostError::BadDeviceSelection {
                    value,
                    source_name: DEVICE_ENV,
                })?,
                Err(_) => 0,
            },
        };
        // SAFETY: only tries to load the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(HostError::NoDriver);
        }
        let available = CudaContext::device_count().doing(|| "counting devices".into())? as usize;
        if ordinal >= available {
            return Err(HostError::NoSuchDevice {
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
        let (major, minor) = info.compute_capability;
        let ptx = ptx::for_compute_capability(major as u32, minor as u32).ok_or_else(|| HostError::NoPtxForDevice {
            major,
            minor,
            built: ptx::EMBEDDED.iter().map(|p| p.arch).collect::<Vec<_>>().join(", "),
        })?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx.ptx))
            .map_err(|source| HostError::PtxLoad {
                arch: ptx.arch,
                isa: ptx::isa_version(ptx.ptx).unwrap_or("?").to_string(),
                source,
            })?;
        let mut functions = HashMap::new();
        for kernel in kernels::registry::kernels() {
            let function = module
                .load_function(kernel.entry)
                .doing(|| format!("loading kernel {}", kernel.entry))?;
            functions.insert(kernel.entry, function);
        }
        Ok(Gpu {
            ctx,
            stream,
            external: None,
            functions: Arc::new(functions),
            cuda_c: None,
            info: Arc::new(info),
            ptx,
            _module: module,
            tensor_map_cache: Arc::default(),
            arrivals: Arc::default(),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The architecture of the PTX the driver loaded, e.g. "sm_90a".
    pub fn ptx_arch(&self) -> &'static str {
        self.ptx.arch
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA C twins, once [`Gpu::load_cuda_c`] loaded them.
    pub fn cuda_c(&self) -> Option<&CudaC> {
        self.cuda_c.as_ref()
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
