//! `ManagedBuffer<T>`: unified memory from cuMemAllocManaged. One pointer valid on CPU and GPU; pages
//! migrate on demand (a page fault each), or ahead of time with prefetch, and advice tells the driver
//! where pages should live and who reads them.

use super::{Gpu, GpuArray};
use crate::error::{Doing, HostError, Result};
use cudarc::driver::sys::{
    self, CUmem_advise, CUmem_range_attribute, CUmemAttach_flags, CUmemLocation, CUmemLocationType,
};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DeviceRepr};
use std::marker::PhantomData;
use std::sync::Arc;

/// Where managed pages are asked to live or be prefetched to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLocation {
    /// The buffer's GPU.
    Device,
    /// The CPU.
    Host,
}

/// A managed allocation of `len` elements of `T`. The CPU may touch it only when no GPU work that
/// uses it is pending: every launch, prefetch and copy on it records an event, and host access
/// checks (`as_slice`, `as_mut_slice`) or waits for (`read`, `write`) that event.
pub struct ManagedBuffer<T> {
    address: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
    ordinal: i32,
    last_use: CudaEvent,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its allocation; host access goes through &self / &mut self.
unsafe impl<T: Send> Send for ManagedBuffer<T> {}
unsafe impl<T: Sync> Sync for ManagedBuffer<T> {}

impl<T: DeviceRepr + Copy> ManagedBuffer<T> {
    /// `len` copies of `value`, written by the CPU (so the pages start on the host). Refused when
    /// larger than the device's free memory: oversubscribing managed memory can hang the GPU.
    pub fn new(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        let (free, _) = gpu.context().mem_get_info().doing(|| "reading free memory".into())?;
        if bytes > free {
            return Err(HostError::ManagedOversubscription { requested: bytes, free });
        }
        Self::allocate(gpu, len, value)
    }

    /// As [`ManagedBuffer::new`] without the free-memory check. Pages beyond the device's memory are
    /// evicted and faulted back as the GPU touches them: very slow, and on some systems it can hang
    /// the GPU. Never use it on shared machines.
    pub fn new_oversubscribed(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        Self::allocate(gpu, len, value)
    }

    fn bytes_for(len: usize) -> Result<usize> {
        len.checked_mul(size_of::<T>())
            .filter(|&b| b > 0 && b <= isize::MAX as usize)
            .ok_or_else(|| HostError::InvalidInput {
                kernel: "ManagedBuffer",
                reason: format!(
                    "{len} elements of {} bytes is not a valid allocation size",
                    size_of::<T>()
                ),
            })
    }

    fn allocate(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        let ctx = gpu.context().clone();
        ctx.bind_to_thread().doing(|| "binding the context".into())?;
        // SAFETY: a fresh allocation of `bytes`, attached globally (any stream may use it).
        let address = unsafe { cudarc::driver::result::malloc_managed(bytes, CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }
            .doing(|| format!("allocating {bytes} bytes of managed memory"))?;
        let last_use = ctx.new_event(None).doing(|| "creating an event".into())?;
        let mut buffer = ManagedBuffer {
            address,
            len,
            ctx,
            ordinal: gpu.info().ordinal as i32,
            last_use,
            _t: PhantomData,
        };
        buffer.as_mut_slice()?.fill(value);
        Ok(buffer)
    }
}

impl<T> ManagedBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether GPU work on this buffer is still pending.
    pub fn is_busy(&self) -> bool {
        !self.last_use.is_complete()
    }

    /// Waits until GPU work on this buffer has finished.
    pub fn wait(&self) -> Result<()> {
        self.last_use
            .synchronize()
            .doing(|| "waiting for GPU work on a managed buffer".into())
    }

    /// The contents, if no GPU work on the buffer is pending; `ManagedBusy` otherwise.
    pub fn as_slice(&self) -> Result<&[T]> {
        if self.is_busy() {
            return Err(HostError::ManagedBusy);
        }
        // SAFETY: no GPU work on the buffer is pending; the allocation holds len elements.
        Ok(unsafe { std::slice::from_raw_parts(self.address as *const T, self.len) })
    }

    /// The contents for writing, if no GPU work on the buffer is pending.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        if self.is_busy() {
            return Err(HostError::ManagedBusy);
        }
        // SAFETY: as in `as_slice`, and `&mut self` excludes other host access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.address as *mut T, self.len) })
    }

    /// Waits for pending GPU work, then gives the contents.
    pub fn read(&self) -> Result<&[T]> {
        self.wait()?;
        self.as_slice()
    }

    /// Waits for pending GPU work, then gives the contents for writing.
    pub fn write(&mut self) -> Result<&mut [T]> {
        self.wait()?;
        self.as_mut_slice()
    }

    fn location(&self, location: MemoryLocation) -> CUmemLocation {
        match location {
            MemoryLocation::Device => CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.ordinal,
            },
            MemoryLocation::Host => CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            },
        }
    }

    /// Moves the pages to `location` ahead of use, asynchronously on the GPU's stream.
    pub fn prefetch(&self, gpu: &Gpu, location: MemoryLocation) -> Result<()> {
        let stream = gpu.stream();
        // SAFETY: the range is this allocation.
        unsafe {
            cudarc::driver::result::mem_prefetch_async(
                self.address,
                self.bytes(),
                self.location(location),
                stream.cu_stream(),
            )
        }
        .doing(|| format!("prefetching {} bytes to the {location:?}", self.bytes()))?;
        self.launched(stream)
    }

    pub fn prefetch_to_device(&self, gpu: &Gpu) -> Result<()> {
        self.prefetch(gpu, MemoryLocation::Device)
    }

    pub fn prefetch_to_host(&self, gpu: &Gpu) -> Result<()> {
        self.prefetch(gpu, MemoryLocation::Host)
    }

    fn advise(&self, advice: CUmem_advise, location: MemoryLocation) -> Result<()> {
        self.ctx.bind_to_thread().doing(|| "binding the context".into())?;
        // SAFETY: the range is this allocation.
        unsafe { cudarc::driver::result::mem_advise(self.address, self.bytes(), advice, self.location(location)) }
            .doing(|| format!("advising {advice:?} on {} bytes", self.bytes()))
    }

    /// Pages are mostly read: each processor that reads them gets a read-only copy, so reads on CPU
    /// and GPU both stay local; a write invalidates the copies.
    pub fn advise_read_mostly(&self) -> Result<()> {
        self.advise(CUmem_advise::CU_MEM_ADVISE_SET_READ_MOSTLY, MemoryLocation::Device)
    }

    /// Pages should live at `location`; others access them remotely or fault them over.
    pub fn advise_preferred_location(&self, location: MemoryLocation) -> Result<()> {
        self.advise(CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, location)
    }

    /// `location` will access the pages: keep them mapped there so that access does not fault.
    pub fn advise_accessed_by(&self, location: MemoryLocation) -> Result<()> {
        self.advise(CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY, location)
    }

    fn range_attribute(&self, attribute: CUmem_range_attribute) -> Result<i32> {
        let mut value: i32 = 0;
        self.ctx.bind_to_thread().doing(|| "binding the context".into())?;
        // SAFETY: writes one i32 for this allocation's range.
        unsafe {
            sys::cuMemRangeGetAttribute(
                (&mut value as *mut i32).cast(),
                4,
                attribute,
                self.address,
                self.bytes(),
            )
        }
        .result()
        .doing(|| format!("reading {attribute:?}"))?;
        Ok(value)
    }

    /// Whether read-mostly advice is in force on the whole buffer.
    pub fn is_read_mostly(&self) -> Result<bool> {
        Ok(self.range_attribute(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY)? != 0)
    }

    /// The preferred location: the device ordinal, -1 for the CPU, -2 for none.
    pub fn preferred_location_id(&self) -> Result<i32> {
        self.range_attribute(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)
    }

    /// Where the last prefetch moved the pages: the device ordinal, -1 for the CPU, -2 for none.
    pub fn last_prefetch_location_id(&self) -> Result<i32> {
        self.range_attribute(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION)
    }
}

impl<T> GpuArray<T> for ManagedBuffer<T> {
    fn address(&self, _stream: &CudaStream) -> u64 {
        self.address
    }

    fn len(&self) -> usize {
        self.len
    }

    fn launched(&self, stream: &CudaStream) -> Result<()> {
        self.last_use
            .record(stream)
            .doing(|| "recording a managed buffer's last use".into())
    }
}

impl<T> Drop for ManagedBuffer<T> {
    fn drop(&mut self) {
        // Freeing memory a kernel still uses is undefined: wait first. Errors cannot propagate from
        // drop; cudarc records them on the context.
        let _ = self.last_use.synchronize();
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemAllocManaged and no longer in use.
        let _ = unsafe { cudarc::driver::result::free_sync(self.address) };
    }
}
