//! The GPU side of the one launch path: the kernel's function from its crate's module (or the
//! module a launch names), its shared-memory limit, and the parameters as one typed value.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use crate::module::Function;
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use ptxkit::launch::DEFAULT_SHARED_BYTES_PER_BLOCK;
use ptxkit::{LaunchShape, Params};

impl Gpu {
    /// Queues `function` over `shape` with `args` on the GPU's stream (or the external one it was
    /// made for); `entry` names it in errors.
    ///
    /// # Safety
    /// `args` are the kernel's parameters, in its order, each pointer valid on this GPU for every
    /// element the launch touches, until the launch has finished.
    pub(crate) unsafe fn launch<A: Params>(
        &self,
        function: &Function,
        entry: &str,
        shape: &LaunchShape,
        mut args: A,
    ) -> Result<()> {
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
        .doing(|| {
            format!(
                "launching {entry} (from {}) over grid {grid}, block {block}",
                function.module()
            )
        })
    }

    /// Raises the function's dynamic shared-memory limit where it needs more than 48 KiB, and
    /// refuses what the device cannot give.
    pub(crate) fn allow_shared_memory(&self, function: &Function, entry: &str, bytes: u32) -> Result<()> {
        let limit = self.info().shared_per_block_optin;
        if bytes > limit {
            return Err(Error::SharedMemoryTooLarge {
                kernel: entry.to_string(),
                needed: bytes,
                limit,
            });
        }
        if bytes > DEFAULT_SHARED_BYTES_PER_BLOCK {
            function
                .set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)
                .map_err(|_| Error::InvalidInput {
                    what: entry.to_string(),
                    reason: format!("the driver would not raise its shared-memory limit to {bytes} bytes"),
                })?;
        }
        Ok(())
    }
}
