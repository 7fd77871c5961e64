//! What a kernel launch can take as an array: plain device memory or managed memory.

use crate::error::Result;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

/// Memory a kernel can read or write through a device address.
pub trait GpuArray<T> {
    /// The device address of element 0.
    fn address(&self, stream: &CudaStream) -> u64;
    /// Elements of `T`.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Called once a launch that uses the array is on `stream` (managed memory records it, so that
    /// the CPU does not touch the array before the launch is done).
    fn launched(&self, _stream: &CudaStream) -> Result<()> {
        Ok(())
    }
}

impl<T> GpuArray<T> for CudaSlice<T> {
    fn address(&self, stream: &CudaStream) -> u64 {
        // Event tracking is off (Gpu::open): the guard records nothing.
        let (address, _guard) = self.device_ptr(stream);
        address
    }

    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
}
