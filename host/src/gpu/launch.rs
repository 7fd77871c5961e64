//! The GPU side of the one launch path: the kernel's function from the chosen source, its shared
//! memory limit, and the parameters as one typed value.

use super::Gpu;
use crate::error::{Doing, HostError, Result};
use cudarc::driver::CudaFunction;
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use kernels::launch::DEFAULT_SHARED_BYTES_PER_BLOCK;
use kernels::{LaunchShape, Params, Source};

impl Gpu {
    /// The function of `entry` compiled from `source`.
    pub fn function(&self, entry: &'static str, source: Source) -> Result<&CudaFunction> {
        let function = match source {
            Source::Rust => self.functions.get(entry),
            Source::CudaC => self.cuda_c.as_ref().and_then(|c| c.function(entry)),
        };
        function.ok_or(HostError::SourceUnavailable {
            entry,
            compiled_from: source,
        })
    }

    /// Queues `entry` from `source` over `shape` with `args` on the GPU's stream (or the external
    /// one it was made for).
    ///
    /// # Safety
    /// `args` are the kernel's parameters, in its order, each pointer valid on this GPU for every
    /// element the launch touches, until the launch has finished.
    pub(crate) unsafe fn launch<A: Params>(
        &self,
        entry: &'static str,
        source: Source,
        shape: &LaunchShape,
        mut args: A,
    ) -> Result<()> {
        let function = self.function(entry, source)?;
        self.allow_shared_memory(function, entry, shape.shared_bytes)?;
        self.context().bind_to_thread().doing(|| "binding the context".into())?;
        let (mut pointers, len) = args.pointers();
        let (grid, block) = (shape.grid, shape.block);
        // SAFETY: the pointers point at `args`, which outlives the call (the driver copies the
        // parameters at launch); their validity on the GPU is the caller's promise.
        unsafe {
            cudarc::driver::result::launch_kernel(
                function.cu_function(),
                (grid.x, grid.y, grid.z),
                (block.x, block.y, block.z),
                shape.shared_bytes,
                self.launch_stream(),
                &mut pointers[..len],
            )
        }
        .doing(|| format!("launching {entry} ({source}) over grid {grid}, block {block}"))
    }

    /// Raises the function's dynamic shared-memory limit where it needs more than 48 KiB, and
    /// refuses what the device cannot give.
    pub(super) fn allow_shared_memory(&self, function: &CudaFunction, entry: &'static str, bytes: u32) -> Result<()> {
        let limit = self.info().shared_per_block_optin;
        if bytes > limit {
            return Err(HostError::SharedMemoryTooLarge {
                kernel: entry,
                needed: bytes,
                limit,
            });
        }
        if bytes > DEFAULT_SHARED_BYTES_PER_BLOCK {
            function
                .set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)
                .doing(|| format!("raising {entry}'s shared-memory limit to {bytes} bytes"))?;
        }
        Ok(())
    }
}
