//! Launches on memory and streams that belong to someone else: a PyTorch tensor on PyTorch's
//! current stream (`host/python`, the extension). The project's own memory (`CudaSlice`,
//! `ManagedBuffer`) is ordered on the [`Gpu`]'s own stream; another framework's memory is ordered
//! on that framework's stream. A `Gpu` made by [`Gpu::on_external_stream`] launches on the
//! external stream and takes only [`ExternalArray`]s, so the two orders never mix.

use crate::array::{Array, Element, Tracked};
use crate::backend::Backend;
use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::{self, CUpointer_attribute};

/// A raw CUDA stream handle created by someone else (PyTorch's `torch.cuda.current_stream()
/// .cuda_stream`), in the primary context of the device it was made on. 0 is the legacy default
/// stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalStream(pub(crate) sys::CUstream);

// SAFETY: a stream handle is a driver object usable from any thread of the process.
unsafe impl Send for ExternalStream {}
unsafe impl Sync for ExternalStream {}

impl ExternalStream {
    /// # Safety
    /// `handle` is 0 (the legacy default stream) or a live stream of the primary context of the
    /// device the `Gpu` it is given to was opened on, and stays alive while launches on it run.
    pub unsafe fn from_raw(handle: usize) -> ExternalStream {
        ExternalStream(handle as sys::CUstream)
    }
}

impl Gpu {
    /// This GPU, launching on `stream` instead of its own: the same context, device and loaded
    /// modules. It takes only [`ExternalArray`]s (the project's own buffers are ordered on the
    /// GPU's own stream, which launches here would not wait for).
    pub fn on_external_stream(&self, stream: ExternalStream) -> Gpu {
        Gpu {
            ctx: self.ctx.clone(),
            stream: self.stream.clone(),
            external: Some(stream),
            modules: self.modules.clone(),
            info: self.info.clone(),
            tensor_map_cache: self.tensor_map_cache.clone(),
            counters: self.counters.clone(),
            padding: self.padding.clone(),
            partials: self.partials.clone(),
        }
    }

    /// The stream made by someone else that this GPU launches on, if any.
    pub fn external_stream(&self) -> Option<ExternalStream> {
        self.external
    }

    /// The stream launches go to: the external one, or the GPU's own.
    pub(crate) fn launch_stream(&self) -> sys::CUstream {
        match self.external {
            Some(ExternalStream(handle)) => handle,
            None => self.stream.cu_stream(),
        }
    }
}

/// `len` elements of `T` of device memory someone else allocated and orders (a PyTorch tensor's
/// storage), checked against the driver's records: memory of the GPU's context, inside one
/// allocation.
pub struct ExternalArray<T> {
    address: u64,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

/// The alignment every kernel of the project has been tested with: what `cudaMalloc` gives (its
/// 16-byte paths need 16; the rest is margin).
pub const EXTERNAL_ALIGNMENT: u64 = 256;

impl<T: Element> ExternalArray<T> {
    /// The array at `address`, after checking with the driver that it is device memory of `gpu`'s
    /// context, aligned to [`EXTERNAL_ALIGNMENT`] and inside one allocation for all `len`
    /// elements.
    ///
    /// # Safety
    /// The memory stays allocated, and nothing touches it out of order with the external stream
    /// of the launches it is given to, until those launches have finished; `len` elements of it
    /// are this array's (the driver sees whole allocations, not a framework's tensors within one).
    pub unsafe fn new(gpu: &Gpu, address: u64, len: usize) -> Result<Self> {
        let bytes = Self::usable(address, len)?;
        gpu.context().bind_to_thread().doing(|| "binding the context".into())?;
        // One driver call for the four records (a call from Python pays it per array): the
        // context, the device, and the allocation's range. Where `address` is not CUDA memory the
        // driver answers with empty records (a zero-sized range) rather than an error.
        let mut context: sys::CUcontext = std::ptr::null_mut();
        let mut ordinal: i32 = -1;
        let (mut base, mut size) = (0u64, 0u64);
        let mut attributes = [
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        let mut data: [*mut std::ffi::c_void; 4] = [
            (&mut context as *mut sys::CUcontext).cast(),
            (&mut ordinal as *mut i32).cast(),
            (&mut base as *mut u64).cast(),
            (&mut size as *mut u64).cast(),
        ];
        // SAFETY: each data pointer points at a local of the attribute's type (a CUcontext, an
        // int, a device pointer, a size), as many as attributes.
        unsafe { sys::cuPointerGetAttributes(4, attributes.as_mut_ptr(), data.as_mut_ptr(), address) }
            .result()
            .doing(|| format!("reading the driver's records of {address:#x}"))?;
        if size == 0 {
            return Err(Error::WrongMemory {
                reason: format!("address {address:#x} is not CUDA device memory"),
            });
        }
        // Memory mapped with the virtual memory calls (PyTorch's expandable segments) belongs to
        // no context: the device it lives on must be this one.
        let ours = if context.is_null() {
            ordinal == gpu.info().ordinal as i32
        } else {
            context == gpu.context().cu_ctx()
        };
        if !ours {
            return Err(Error::WrongMemory {
                reason: format!(
                    "address {address:#x} belongs to another context than device {}'s primary context",
                    gpu.info().ordinal
                ),
            });
        }
        if address + bytes > base + size {
            return Err(Error::WrongMemory {
                reason: format!(
                    "{bytes} bytes at {address:#x} run past the end of its allocation ({size} bytes at {base:#x})"
                ),
            });
        }
        Ok(ExternalArray {
            address,
            len,
            _t: std::marker::PhantomData,
        })
    }

    /// The array at `address`, taken on a framework's word that it is `len` elements of `gpu`'s
    /// device memory: only the length and the alignment are checked. A framework's own tensor
    /// (PyTorch's, on the device its metadata names) needs no driver query; the query in
    /// [`ExternalArray::new`] cost 0.1–0.2 µs per array from Rust (run 2026-12-01-af).
    ///
    /// # Safety
    /// As for [`ExternalArray::new`], and also what `new` would check: `len` elements from
    /// `address` lie inside one allocation of device memory reachable from `gpu`'s context.
    pub unsafe fn of_framework(address: u64, len: usize) -> Result<Self> {
        Self::usable(address, len)?;
        Ok(ExternalArray {
            address,
            len,
            _t: std::marker::PhantomData,
        })
    }

    /// The array's bytes, where `len` elements at `address` are a length and an alignment the
    /// kernels take.
    fn usable(address: u64, len: usize) -> Result<u64> {
        let bytes = (len as u64)
            .checked_mul(size_of::<T>() as u64)
            .filter(|&b| b > 0)
            .ok_or_else(|| Error::InvalidInput {
                what: "external array".into(),
                reason: format!("{len} elements is not a usable length"),
            })?;
        if !address.is_multiple_of(EXTERNAL_ALIGNMENT) {
            return Err(Error::InvalidInput {
                what: "external array".into(),
                reason: format!(
                    "address {address:#x} is not aligned to {EXTERNAL_ALIGNMENT} bytes (a view into a larger tensor?): pass a copy"
                ),
            });
        }
        Ok(bytes)
    }
}

/// The external stream orders it: nothing to record.
impl<T> Tracked for ExternalArray<T> {}

// SAFETY: checked at construction to be `len` elements of device memory of the context; valid
// while borrowed by the constructor's contract; only on a GPU launching on an external stream,
// which orders it.
unsafe impl<T: Element> Array<T> for ExternalArray<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match backend {
            Backend::Gpu(gpu) if gpu.external_stream().is_some() => Ok(self.address),
            _ => Err(Error::WrongMemory {
                reason: "external memory is launched on only by a Gpu on its external stream (Gpu::on_external_stream)"
                    .into(),
            }),
        }
    }
}
