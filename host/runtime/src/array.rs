//! What a kernel launch can take as an array: host memory (for the emulator), device memory (for the
//! GPU; also a read-only view of part of it) and managed memory (for both), each with its length and
//! its address on a backend.

use crate::backend::Backend;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaView, DevicePtr, DeviceSlice, sys};
use ptxkit::device::{GlobalMatrix, GlobalMatrixMut, GlobalSlice, GlobalSliceMut};

/// Plain data of which every bit pattern is a valid value: what kernels read and write, and what
/// the CPU may look at after a kernel wrote it.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes is a valid `Self`, and `Self` has no padding.
pub unsafe trait Element: Copy + Send + Sync + 'static {}

macro_rules! elements {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number: every bit pattern is a value, no padding.
        unsafe impl Element for $t {}
    )*};
}
elements!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Memory whose use by launched GPU work is tracked, so that the CPU does not touch it too early.
pub trait Tracked {
    /// Called once a launch that uses the memory is on `backend`'s stream.
    fn launched(&self, _backend: &Backend) -> Result<()> {
        Ok(())
    }
}

/// An array a kernel can take: its length, and where a kernel on a backend finds it.
///
/// # Safety
/// Launches trust these answers: when `address` (or `address_mut`) returns `Ok`, that address is
/// valid on `backend` for `len()` elements of `T` for as long as the borrow it was taken through
/// lasts (for `address_mut`, valid for writes too), and the memory is not in use by anything the
/// launch could race with.
pub unsafe trait Array<T: Element>: Tracked {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where a kernel on `backend` reads element 0, or why it cannot reach this memory there.
    fn address(&self, backend: &Backend) -> Result<u64>;

    /// Where a kernel on `backend` writes element 0.
    fn address_mut(&mut self, backend: &Backend) -> Result<u64> {
        self.address(backend)
    }

    /// The array as a kernel on `backend` reads it: a typed view of its `len()` elements, whose
    /// bounds the emulator checks (and the GPU too, through the view's checked accessors).
    fn view(&self, backend: &Backend) -> Result<GlobalSlice<T>> {
        let address = self.address(backend)?;
        // SAFETY: `address` is valid on `backend` for `len()` elements (this trait's contract);
        // a launch that takes the view promises to use it only while the array is borrowed.
        Ok(unsafe { GlobalSlice::from_raw_parts(address as *const T, self.len()) })
    }

    /// The array as a kernel on `backend` writes it: a typed view of its `len()` elements.
    fn view_mut(&mut self, backend: &Backend) -> Result<GlobalSliceMut<T>> {
        let address = self.address_mut(backend)?;
        // SAFETY: as in `view`, for writes too (`address_mut`).
        Ok(unsafe { GlobalSliceMut::from_raw_parts(address as *mut T, self.len()) })
    }

    /// The first `rows · cols` elements as a dense `rows × cols` matrix a kernel on `backend`
    /// reads; an error naming `what` where the array is shorter.
    fn matrix(&self, backend: &Backend, what: &str, rows: u32, cols: u32) -> Result<GlobalMatrix<T>> {
        check_len(what, self.len(), rows as usize * cols as usize)?;
        let address = self.address(backend)?;
        // SAFETY: as in `view`: rows · cols ≤ len() elements, dense rows (pitch = cols).
        Ok(unsafe { GlobalMatrix::from_raw_parts(address as *const T, rows, cols, cols) })
    }

    /// The first `rows · cols` elements as a dense `rows × cols` matrix a kernel on `backend`
    /// writes; an error naming `what` where the array is shorter.
    fn matrix_mut(&mut self, backend: &Backend, what: &str, rows: u32, cols: u32) -> Result<GlobalMatrixMut<T>> {
        check_len(what, self.len(), rows as usize * cols as usize)?;
        let address = self.address_mut(backend)?;
        // SAFETY: as in `view_mut`, for a dense matrix inside the array.
        Ok(unsafe { GlobalMatrixMut::from_raw_parts(address as *mut T, rows, cols, cols) })
    }
}

fn unreachable_memory(what: &str, backend: &Backend, fix: &str) -> Error {
    Error::WrongMemory {
        reason: format!("{what} cannot be used by a kernel on the {}: {fix}", backend.name()),
    }
}

impl<T> Tracked for Vec<T> {}

// SAFETY: host memory, valid for len() elements while borrowed; writes go through `address_mut`,
// which takes `&mut self`. The emulator runs the launch to completion before returning.
unsafe impl<T: Element> Array<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match backend {
            Backend::Emu => Ok(self.as_ptr() as u64),
            Backend::Gpu(_) => Err(unreachable_memory(
                "host memory",
                backend,
                "copy it to the GPU (Gpu::upload) or use a ManagedBuffer",
            )),
        }
    }

    fn address_mut(&mut self, backend: &Backend) -> Result<u64> {
        self.address(backend)?;
        Ok(self.as_mut_ptr() as u64)
    }
}

/// Where a kernel on `backend` finds device memory of context `ctx`: `address()`, or why it cannot
/// reach the memory there.
fn device_memory(ctx: sys::CUcontext, backend: &Backend, address: impl FnOnce() -> u64) -> Result<u64> {
    match backend {
        Backend::Gpu(gpu) if gpu.external_stream().is_some() => Err(unreachable_memory(
            "device memory ordered on this project's stream",
            backend,
            "launch on the GPU's own stream, not an external one",
        )),
        Backend::Gpu(gpu) if ctx == gpu.context().cu_ctx() => Ok(address()),
        Backend::Gpu(_) => Err(unreachable_memory(
            "device memory of another GPU",
            backend,
            "copy it to this GPU first",
        )),
        Backend::Emu => Err(unreachable_memory(
            "device memory",
            backend,
            "copy it to the host first (Gpu::download)",
        )),
    }
}

impl<T> Tracked for CudaSlice<T> {}

// SAFETY: device memory of this length, owned by the slice while it lives, and only on the GPU of
// the context it was allocated in. All of this project's work runs on one stream per GPU, so a
// launch is ordered after every earlier use.
unsafe impl<T: Element> Array<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        device_memory(self.context().cu_ctx(), backend, || {
            // Event tracking is off (Gpu::open): the guard records nothing.
            let (address, _guard) = self.device_ptr(self.stream());
            address
        })
    }
}

impl<T> Tracked for CudaView<'_, T> {}

// SAFETY: elements of a `CudaSlice`'s device memory (`CudaSlice::slice` checks that the range lies
// inside it), kept allocated by the view's borrow of the slice; as for `CudaSlice`, only on the GPU
// of its context and on this project's one stream, which orders the launch after every earlier
// use. Read only: the view is a shared borrow of the slice, so no kernel writes through it
// (`address_mut` refuses).
unsafe impl<T: Element> Array<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        device_memory(self.stream().context().cu_ctx(), backend, || {
            // Event tracking is off (Gpu::open): the guard records nothing.
            let (address, _guard) = self.device_ptr(self.stream());
            address
        })
    }

    fn address_mut(&mut self, _backend: &Backend) -> Result<u64> {
        Err(Error::WrongMemory {
            reason: "a view of device memory (CudaSlice::slice) is read only: a kernel writes the CudaSlice itself"
                .into(),
        })
    }
}

/// An array on whichever backend a case runs: host memory for the emulator, device memory for the
/// GPU. What the family harnesses allocate their inputs and outputs in.
pub enum Buffer<T> {
    Host(Vec<T>),
    Device(CudaSlice<T>),
}

impl<T: Element + cudarc::driver::DeviceRepr + Default> Buffer<T> {
    /// A copy of `values` where kernels on `backend` can reach it.
    pub fn upload(backend: &Backend, values: &[T]) -> Result<Self> {
        match backend {
            Backend::Emu => Ok(Buffer::Host(values.to_vec())),
            Backend::Gpu(gpu) => Ok(Buffer::Device(gpu.upload(values)?)),
        }
    }

    /// The contents, copied to the host where they are on the GPU.
    pub fn read(&self, backend: &Backend) -> Result<Vec<T>> {
        match (self, backend) {
            (Buffer::Host(values), _) => Ok(values.clone()),
            (Buffer::Device(slice), Backend::Gpu(gpu)) => gpu.download(slice),
            (Buffer::Device(_), Backend::Emu) => Err(unreachable_memory(
                "device memory",
                backend,
                "read it back on the GPU it lives on",
            )),
        }
    }

    /// Overwrites every element with `values` (same length).
    pub fn write(&mut self, backend: &Backend, values: &[T]) -> Result<()> {
        match (self, backend) {
            (Buffer::Host(host), _) => host.copy_from_slice(values),
            (Buffer::Device(slice), Backend::Gpu(gpu)) => gpu.copy_into(values, slice)?,
            (Buffer::Device(_), Backend::Emu) => {
                return Err(unreachable_memory("device memory", backend, "write it on its GPU"));
            }
        }
        Ok(())
    }
}

impl<T> Tracked for Buffer<T> {}

// SAFETY: delegates to the Vec or CudaSlice inside, whose own answers are sound.
unsafe impl<T: Element> Array<T> for Buffer<T> {
    fn len(&self) -> usize {
        match self {
            Buffer::Host(values) => values.len(),
            Buffer::Device(slice) => slice.len(),
        }
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match self {
            Buffer::Host(values) => values.address(backend),
            Buffer::Device(slice) => slice.address(backend),
        }
    }

    fn address_mut(&mut self, backend: &Backend) -> Result<u64> {
        match self {
            Buffer::Host(values) => values.address_mut(backend),
            Buffer::Device(slice) => slice.address_mut(backend),
        }
    }
}

/// `len` ≥ `needed`, or an error naming the array.
pub fn check_len(what: &str, len: usize, needed: usize) -> Result<()> {
    if len < needed {
        return Err(Error::InvalidInput {
            what: what.to_string(),
            reason: format!("it has {len} elements, but the problem needs {needed}"),
        });
    }
    Ok(())
}
