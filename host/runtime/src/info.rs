//! What the device is and what it allows, and how many blocks of each kernel fit on one SM.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::CudaContext;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use ptxkit::{Dim3, Kernel, KernelInfo, LaunchShape, Occupancy, Problem};
use std::sync::{Arc, PoisonError};

#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub max_threads_per_sm: u32,
    pub shared_per_sm: u32,
    /// Shared memory a block gets without opting in (48 KB).
    pub shared_per_block: u32,
    /// Shared memory a block may get after raising its limit.
    pub shared_per_block_optin: u32,
    pub registers_per_sm: u32,
    pub l2_bytes: u32,
    pub memory_total: usize,
    pub memory_free: usize,
    /// e.g. "13.0"
    pub driver_cuda_version: String,
    /// The CUDA version of the bindings this binary was built with.
    pub bindings_cuda_version: &'static str,
    pub managed_memory: bool,
    pub concurrent_managed_access: bool,
    pub pageable_memory_access: bool,
}

/// How one kernel fits on an SM.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelOccupancy {
    pub entry: &'static str,
    pub threads_per_block: u32,
    pub shared_bytes_per_block: u32,
    pub registers_per_thread: i32,
    pub resident_blocks_per_sm: u32,
    /// Resident threads over the SM's maximum.
    pub occupancy: f64,
}

impl DeviceInfo {
    pub(crate) fn query(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
        let attr = |a: Attr| ctx.attribute(a).doing(|| format!("reading device attribute {a:?}"));
        let (memory_free, memory_total) = ctx.mem_get_info().doing(|| "reading free memory".into())?;
        let mut driver = 0;
        // SAFETY: writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }
            .result()
            .doing(|| "reading the driver version".into())?;
        Ok(DeviceInfo {
            ordinal: ctx.ordinal(),
            name: ctx.name().doing(|| "reading the device name".into())?,
            compute_capability: ctx
                .compute_capability()
                .doing(|| "reading the compute capability".into())?,
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
            shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u32,
            shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u32,
            shared_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32,
            registers_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)? as u32,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u32,
            memory_total,
            memory_free,
            driver_cuda_version: format!("{}.{}", driver / 1000, driver % 1000 / 10),
            bindings_cuda_version: "13.0",
            managed_memory: attr(Attr::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0,
            concurrent_managed_access: attr(Attr::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? != 0,
            pageable_memory_access: attr(Attr::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)? != 0,
        })
    }
}

impl Gpu {
    /// Resident blocks per SM for `kernel` at its block size and shared bytes. The seed's advice:
    /// pick tiles so that two or three blocks fit on an SM.
    pub fn occupancy(&self, kernel: &KernelInfo) -> Result<KernelOccupancy> {
        let function = self.function(kernel.krate, kernel.entry, None)?;
        let threads = kernel.block.volume() as u32;
        // The driver counts a block that needs more than the function's current shared-memory
        // limit as not fitting at all: raise it first, as a launch would.
        self.allow_shared_memory(&function, kernel.entry, kernel.shared_bytes)?;
        let blocks = function.max_active_blocks_per_sm(threads, kernel.shared_bytes)?;
        Ok(KernelOccupancy {
            entry: kernel.entry,
            threads_per_block: threads,
            shared_bytes_per_block: kernel.shared_bytes,
            registers_per_thread: function.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            resident_blocks_per_sm: blocks,
            occupancy: (blocks * threads) as f64 / self.info().max_threads_per_sm as f64,
        })
    }

    /// Blocks of kernel `entry` of crate `krate` (or of the module `from` names, where the crate's
    /// is not loaded) this GPU holds at once with `block` threads and `shared_bytes` each: SMs ×
    /// the driver's resident blocks per SM, or for a kernel launched in clusters the driver's
    /// resident clusters × their blocks; at least 1. Measured once per function and shape.
    pub fn resident_blocks(
        &self,
        (krate, entry): (&str, &str),
        block: Dim3,
        shared_bytes: u32,
        from: Option<&str>,
    ) -> Result<u32> {
        let function = match self.function(krate, entry, None) {
            Err(Error::NotLoaded { .. }) if from.is_some() => self.function(krate, entry, from)?,
            found => found?,
        };
        let threads = block.volume() as u32;
        let key = (function.handle as usize, threads, shared_bytes);
        let known = function
            .module
            .resident
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .copied();
        if let Some(resident) = known {
            return Ok(resident);
        }
        self.allow_shared_memory(&function, entry, shared_bytes)?;
        let width = function.cluster_width()?;
        let resident = if width > 1 {
            (function.max_active_clusters(threads, shared_bytes, width)? * width).max(width)
        } else {
            self.info().sm_count * function.max_active_blocks_per_sm(threads, shared_bytes)?.max(1)
        };
        function
            .module
            .resident
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, resident);
        Ok(resident)
    }

    /// The grid, block and shared bytes a launch of `kernel` for `problem` runs on this GPU
    /// ([`Backend::launch_shape`](crate::Backend::launch_shape)).
    pub fn launch_shape<P: Problem>(&self, kernel: &Kernel<P>, problem: &P) -> Result<LaunchShape> {
        if !kernel.grid_reads_device(problem) {
            return Ok(kernel.launch_shape(problem, Occupancy::ONE));
        }
        let code = &kernel.code;
        let resident_blocks =
            self.resident_blocks((code.krate(), code.entry()), kernel.block, kernel.shared.bytes(), None)?;
        Ok(kernel.launch_shape(problem, Occupancy { resident_blocks }))
    }
}
