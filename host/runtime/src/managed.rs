//! `ManagedBuffer<T>`: unified memory from cuMemAllocManaged. One pointer valid on CPU and GPU; pages
//! migrate on demand (a page fault each), or ahead of time with prefetch, and advice tells the driver
//! where pages should live and who reads them.

use crate::array::{Array, Element, Tracked};
use crate::backend::Backend;
use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::{
    self, CUmem_advise, CUmem_range_attribute, CUmemAttach_flags, CUmemLocation, CUmemLocationType,
};
use cudarc::driver::{CudaContext, CudaEvent};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;

/// Where managed pages are asked to live or be prefetched to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLocation {
    /// The buffer's GPU in advice; in a prefetch, the GPU whose stream runs it.
    Device,
    /// The CPU.
    Host,
    /// The GPU of this device number (several GPUs sharing one buffer).
    Gpu(usize),
}

/// A managed allocation of `len` elements of `T`. The CPU may touch it only when no GPU work that
/// uses it is pending: every launch, prefetch and copy on it records an event, and host access
/// checks (`as_slice`, `as_mut_slice`) or waits for (`read`, `write`) that event. On a device
/// without concurrent managed access (the attribute `DeviceInfo::concurrent_managed_access`), the
/// CPU may not touch any managed memory while any kernel runs, so host access there first waits
/// for all of the context's work.
///
/// Other GPUs (or other streams of the same one) may use it after [`ManagedBuffer::share_with`]:
/// each user stream has its own last-use and last-write events. A kernel that writes the buffer
/// waits for every other stream's last use; one that only reads it waits for their last writes
/// alone, so readers on several GPUs (read-mostly duplicates, say) run at once.
pub struct ManagedBuffer<T> {
    address: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
    ordinal: i32,
    concurrent_access: bool,
    /// The last use on the allocating GPU's stream, then on each stream shared with.
    uses: Vec<StreamUse>,
    /// Attached to one stream (`cuStreamAttachMemAsync`): on a device without concurrent managed
    /// access the CPU may then touch it whenever that stream's work on it is done, even while
    /// kernels run on other streams.
    attached: Option<sys::CUstream>,
    /// Set when a launch took the address for writing, until that launch is recorded.
    writing: Cell<bool>,
    _t: PhantomData<T>,
}

/// One stream that may use a managed buffer, and the events its last use and last write recorded.
struct StreamUse {
    stream: sys::CUstream,
    ctx: Arc<CudaContext>,
    last_use: CudaEvent,
    last_write: CudaEvent,
}

/// How a stream's new work uses a managed buffer, and so what of the other streams' work it waits
/// for.
#[derive(Clone, Copy)]
enum Use {
    /// Reads only: after the others' writes.
    Read,
    /// Writes, moves or attaches it: after everything the others queued on it.
    Exclusive,
}

impl StreamUse {
    fn of(gpu: &Gpu) -> Result<StreamUse> {
        let event = || gpu.context().new_event(None).doing(|| "creating an event".into());
        Ok(StreamUse {
            stream: gpu.stream().cu_stream(),
            ctx: gpu.context().clone(),
            last_use: event()?,
            last_write: event()?,
        })
    }
}

// SAFETY: the buffer owns its allocation; host access goes through &self / &mut self, and T is
// plain data.
unsafe impl<T: Element> Send for ManagedBuffer<T> {}
unsafe impl<T: Element> Sync for ManagedBuffer<T> {}

impl<T: Element> ManagedBuffer<T> {
    /// `len` copies of `value`, written by the CPU (so the pages start on the host). Refused when
    /// larger than the device's free memory: oversubscribing managed memory can hang the GPU.
    pub fn new(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        let (free, _) = gpu.context().mem_get_info().doing(|| "reading free memory".into())?;
        if bytes > free {
            return Err(Error::ManagedOversubscription { requested: bytes, free });
        }
        Self::allocate(gpu, len, value)
    }

    /// `len` zeros written by the GPU (`cuMemsetD8Async` on its stream): the pages are first
    /// touched on the device, so they are created in its memory and never migrate there. Refused
    /// as [`ManagedBuffer::new`] is.
    pub fn zeroed_on_gpu(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        let (free, _) = gpu.context().mem_get_info().doing(|| "reading free memory".into())?;
        if bytes > free {
            return Err(Error::ManagedOversubscription { requested: bytes, free });
        }
        let buffer = Self::allocate_untouched(gpu, len)?;
        // SAFETY: the range is this allocation; zero bytes are a value of every Element type.
        unsafe { cudarc::driver::result::memset_d8_async(buffer.address, 0, bytes, gpu.stream().cu_stream()) }
            .doing(|| format!("zeroing {bytes} bytes of managed memory on the GPU"))?;
        buffer.record_use(gpu)?;
        Ok(buffer)
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
            .ok_or_else(|| Error::InvalidInput {
                what: "ManagedBuffer".into(),
                reason: format!(
                    "{len} elements of {} bytes is not a valid allocation size",
                    size_of::<T>()
                ),
            })
    }

    fn allocate(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        let buffer = Self::allocate_untouched(gpu, len)?;
        // Written through the raw pointer: no reference to the memory exists before it holds values.
        buffer.wait_for_host_access()?;
        let start = buffer.address as *mut T;
        for i in 0..len {
            // SAFETY: i < len, inside the fresh allocation of len elements, aligned (cuMemAllocManaged
            // aligns to at least 256 bytes), and no GPU work uses it yet.
            unsafe { start.add(i).write(value) };
        }
        Ok(buffer)
    }

    /// The allocation, not yet touched by anyone: the caller writes every element before any read.
    fn allocate_untouched(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        let ctx = gpu.context().clone();
        ctx.bind_to_thread().doing(|| "binding the context".into())?;
        // SAFETY: a fresh allocation of `bytes`, attached globally (any stream may use it).
        let address = unsafe { cudarc::driver::result::malloc_managed(bytes, CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }
            .doing(|| format!("allocating {bytes} bytes of managed memory"))?;
        let buffer = ManagedBuffer {
            address,
            len,
            ctx,
            ordinal: gpu.info().ordinal as i32,
            concurrent_access: gpu.info().concurrent_managed_access,
            uses: vec![StreamUse::of(gpu)?],
            attached: None,
            writing: Cell::new(false),
            _t: PhantomData,
        };
        Ok(buffer)
    }
}

impl<T: Element> ManagedBuffer<T> {
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
        self.uses.iter().any(|u| !u.last_use.is_complete())
    }

    /// Waits until GPU work on this buffer has finished.
    pub fn wait(&self) -> Result<()> {
        self.uses.iter().try_for_each(|u| {
            u.last_use
                .synchronize()
                .doing(|| "waiting for GPU work on a managed buffer".into())
        })
    }

    /// Lets `gpu` (another GPU, or another stream of this one) launch on and prefetch the buffer.
    /// Work it queues waits for every other user's, and theirs for its.
    pub fn share_with(&mut self, gpu: &Gpu) -> Result<()> {
        if gpu.external_stream().is_some() {
            return Err(Error::WrongMemory {
                reason: "a managed buffer is shared with a GPU's own stream, not an external one".into(),
            });
        }
        if self.user(gpu).is_some() {
            return Ok(());
        }
        self.uses.push(StreamUse::of(gpu)?);
        Ok(())
    }

    /// Attaches the buffer to `gpu`'s stream alone (`cuStreamAttachMemAsync`, single-stream), which
    /// must be one it is shared with: kernels on other streams may no longer touch it, and on a
    /// device without concurrent managed access the CPU may use it while other streams run (on one
    /// with it, as the H200, the CPU may anyway: the attachment changes nothing there).
    pub fn attach_to_stream(&mut self, gpu: &Gpu) -> Result<()> {
        self.order_on(gpu, Use::Exclusive)?;
        // SAFETY: the whole allocation (length 0), attached to a stream of a context that shares it.
        unsafe {
            sys::cuStreamAttachMemAsync(
                gpu.stream().cu_stream(),
                self.address,
                0,
                CUmemAttach_flags::CU_MEM_ATTACH_SINGLE as u32,
            )
        }
        .result()
        .doing(|| "attaching managed memory to a stream".into())?;
        self.record_use(gpu)?;
        self.attached = Some(gpu.stream().cu_stream());
        Ok(())
    }

    /// The index of `gpu`'s stream among the buffer's users.
    fn user(&self, gpu: &Gpu) -> Option<usize> {
        let stream = gpu.stream().cu_stream();
        self.uses.iter().position(|u| u.stream == stream)
    }

    /// `gpu`'s stream, ordered after every other user's last use (`Use::Exclusive`), or only
    /// after their last writes (`Use::Read`): an error where the buffer was not shared with it.
    fn order_on(&self, gpu: &Gpu, how: Use) -> Result<usize> {
        if self.attached.is_some_and(|stream| stream != gpu.stream().cu_stream()) {
            return Err(Error::WrongMemory {
                reason: "this managed buffer is attached to another stream: only that stream's work may use it".into(),
            });
        }
        let user = self.user(gpu).ok_or_else(|| Error::WrongMemory {
            reason: format!(
                "this managed buffer is not shared with device {}'s stream: call share_with first",
                gpu.info().ordinal
            ),
        })?;
        for (i, other) in self.uses.iter().enumerate() {
            if i != user {
                let after = match how {
                    Use::Exclusive => &other.last_use,
                    Use::Read => &other.last_write,
                };
                gpu.stream()
                    .wait(after)
                    .doing(|| "ordering a stream after another's use of a managed buffer".into())?;
            }
        }
        Ok(user)
    }

    /// `ManagedBusy` while GPU work on the buffer is pending. On a device without concurrent
    /// managed access, waits for all of the context's work instead: the CPU may touch no managed
    /// memory there while any kernel runs.
    fn host_access(&self) -> Result<()> {
        if !self.concurrent_access && self.attached.is_none() {
            return self.wait_for_host_access();
        }
        if self.is_busy() {
            return Err(Error::ManagedBusy);
        }
        Ok(())
    }

    /// Waits until the CPU may touch the buffer.
    fn wait_for_host_access(&self) -> Result<()> {
        if self.concurrent_access || self.attached.is_some() {
            self.wait()
        } else {
            self.uses.iter().try_for_each(|u| {
                u.ctx
                    .synchronize()
                    .doing(|| "waiting for all GPU work before touching managed memory".into())
            })
        }
    }

    /// The contents, if no GPU work on the buffer is pending; `ManagedBusy` otherwise.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.host_access()?;
        // SAFETY: the CPU may touch the buffer now; the allocation holds len initialised elements
        // (written at allocation), and T is plain data, so whatever a kernel wrote is a valid T.
        Ok(unsafe { std::slice::from_raw_parts(self.address as *const T, self.len) })
    }

    /// The contents for writing, if no GPU work on the buffer is pending.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.host_access()?;
        // SAFETY: as in `as_slice`, and `&mut self` excludes other host access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.address as *mut T, self.len) })
    }

    /// Waits for pending GPU work, then gives the contents.
    pub fn read(&self) -> Result<&[T]> {
        self.wait_for_host_access()?;
        self.as_slice()
    }

    /// Waits for pending GPU work, then gives the contents for writing.
    pub fn write(&mut self) -> Result<&mut [T]> {
        self.wait_for_host_access()?;
        self.as_mut_slice()
    }

    fn location(&self, location: MemoryLocation) -> CUmemLocation {
        let device = |id: i32| CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id,
        };
        match location {
            MemoryLocation::Device => device(self.ordinal),
            MemoryLocation::Gpu(ordinal) => device(ordinal as i32),
            MemoryLocation::Host => CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            },
        }
    }

    /// Moves the pages to `location` ahead of use, asynchronously on the GPU's stream (after every
    /// other user's work on the buffer). `MemoryLocation::Device` is that GPU.
    pub fn prefetch(&self, gpu: &Gpu, location: MemoryLocation) -> Result<()> {
        let stream = gpu.stream();
        self.order_on(gpu, Use::Exclusive)?;
        let location = match location {
            MemoryLocation::Device => MemoryLocation::Gpu(gpu.info().ordinal),
            other => other,
        };
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
        self.record_use(gpu)
    }

    /// Records that work just queued on the GPU's stream uses the buffer (and writes it, where the
    /// launch took the address for writing).
    fn record_use(&self, gpu: &Gpu) -> Result<()> {
        let user = self.user(gpu).ok_or_else(|| Error::WrongMemory {
            reason: "a managed buffer's use was recorded on a stream it is not shared with".into(),
        })?;
        let recording = |event: &CudaEvent| {
            event
                .record(gpu.stream())
                .doing(|| "recording a managed buffer's last use".into())
        };
        if self.writing.take() {
            recording(&self.uses[user].last_write)?;
        }
        recording(&self.uses[user].last_use)
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

/// Chunks: a range of the buffer launched as an array of its own, and prefetched on any stream.
impl<T: Element> ManagedBuffer<T> {
    /// Elements `range` as an array for launches (a non-empty range inside the buffer). The chunk
    /// holds the buffer mutably borrowed while it lives.
    pub fn chunk_mut(&mut self, range: std::ops::Range<usize>) -> Result<crate::managed_chunk::ManagedChunk<'_, T>> {
        crate::managed_chunk::ManagedChunk::new(self, range)
    }

    /// Moves elements `range` to `location` ahead of use, asynchronously on `stream` (any stream of
    /// the buffer's context), so that the move can overlap work on other streams.
    ///
    /// Then the GPU's stream waits for everything queued on `stream` so far, and the buffer's last
    /// use is recorded on the GPU's stream. That keeps host access sound with several streams: every
    /// use of the buffer (launches, prefetches, this) is recorded on the one GPU stream, after a
    /// wait for any other stream's work on it, so the last recording completes only after all of
    /// it. (Recording on `stream` itself would not: a later recording on a stream that runs ahead
    /// could complete while an earlier use on another stream is still pending.) The cost: work
    /// queued on the GPU's stream afterwards waits for this move, so queue the work it should
    /// overlap (the kernel on another chunk) before calling this.
    pub fn prefetch_range_on(
        &self,
        gpu: &Gpu,
        stream: &cudarc::driver::CudaStream,
        range: std::ops::Range<usize>,
        location: MemoryLocation,
    ) -> Result<()> {
        if stream.context().cu_ctx() != self.ctx.cu_ctx() || gpu.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::WrongMemory {
                reason: "a managed buffer can be prefetched only on streams of its own GPU's context".into(),
            });
        }
        crate::managed_chunk::check_range(&range, self.len)?;
        let (offset, bytes) = (range.start * size_of::<T>(), range.len() * size_of::<T>());
        self.ctx.bind_to_thread().doing(|| "binding the context".into())?;
        // SAFETY: the range is inside this allocation (checked above).
        unsafe {
            cudarc::driver::result::mem_prefetch_async(
                self.address + offset as u64,
                bytes,
                self.location(location),
                stream.cu_stream(),
            )
        }
        .doing(|| format!("prefetching {bytes} bytes at offset {offset} to the {location:?}"))?;
        let recorded = gpu
            .stream()
            .join(stream)
            .doing(|| "ordering the GPU's stream after a prefetch".into())
            .and_then(|()| self.record_use(gpu));
        if recorded.is_err() {
            // The move is not covered by the last-use event: drain it, so that the buffer does not
            // look idle while it runs.
            let _ = stream.synchronize();
        }
        recorded
    }
}

impl<T: Element> Tracked for ManagedBuffer<T> {
    fn launched(&self, backend: &Backend) -> Result<()> {
        match backend {
            Backend::Gpu(gpu) => self.record_use(gpu),
            // The emulator has finished with it when the launch returns.
            Backend::Emu => Ok(()),
        }
    }
}

// SAFETY: one allocation of len elements, valid on every GPU and on the CPU (that is managed
// memory): launched only on streams it is shared with, a reader ordered after the others' writes, a
// writer after all their uses; on the
// emulator only when the CPU may touch it now (no pending GPU work).
unsafe impl<T: Element> Array<T> for ManagedBuffer<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match backend {
            Backend::Gpu(gpu) if gpu.external_stream().is_some() => Err(Error::WrongMemory {
                reason: "a managed buffer's uses are recorded on the GPU's own stream: launch it there, not on an external one".into(),
            }),
            Backend::Gpu(gpu) => {
                self.order_on(gpu, Use::Read)?;
                Ok(self.address)
            }
            Backend::Emu => {
                self.host_access()?;
                Ok(self.address)
            }
        }
    }

    fn address_mut(&mut self, backend: &Backend) -> Result<u64> {
        if let Backend::Gpu(gpu) = backend
            && gpu.external_stream().is_none()
        {
            // A writer waits for every other stream's reads too, and readers after it wait for it.
            self.order_on(gpu, Use::Exclusive)?;
            self.writing.set(true);
            return Ok(self.address);
        }
        self.address(backend)
    }
}

impl<T> Drop for ManagedBuffer<T> {
    fn drop(&mut self) {
        // Freeing memory a kernel still uses is undefined: wait first. Errors cannot propagate from
        // drop; cudarc records them on the context.
        for u in &self.uses {
            let _ = u.last_use.synchronize();
        }
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemAllocManaged and no longer in use.
        let _ = unsafe { cudarc::driver::result::free_sync(self.address) };
    }
}
