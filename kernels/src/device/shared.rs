//! Dynamic shared memory carved into typed views whose bounds are known.
//!
//! All of a kernel's shared memory is dynamic (sized at launch). A kernel carves it in order with
//! [`DynamicShared`]; the same [`MatrixLayout`] constants give the bytes the host must launch with, so
//! the size is written once. Carving past what the launch gave, and element access out of bounds,
//! fail the launch with a message on the emulator. On the GPU neither is checked: a check per access
//! would cost as much as the access, and even the one carve check at kernel start cost 2.7 % of
//! shared_mem_add on the H200 (it delays every warp's first loads; docs/perf-log.md). There, the
//! launch shape built from the kernel's own constants is the guarantee, and the emulator tests it.

use super::word::SharedWord;
use core::marker::PhantomData;

/// A `rows × cols` matrix stored row-major with `pitch` elements per row (`pitch ≥ cols`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixLayout {
    pub rows: u32,
    pub cols: u32,
    pub pitch: u32,
}

impl MatrixLayout {
    /// Rows stored back to back.
    pub const fn dense(rows: u32, cols: u32) -> Self {
        MatrixLayout {
            rows,
            cols,
            pitch: cols,
        }
    }

    /// Each row padded by one element, so that walking down a column of a 32-wide tile touches 32
    /// different banks instead of one (shared memory has 32 banks of 4 bytes).
    pub const fn padded(rows: u32, cols: u32) -> Self {
        MatrixLayout {
            rows,
            cols,
            pitch: cols + 1,
        }
    }

    /// Elements of storage, padding included.
    pub const fn elements(&self) -> u32 {
        self.rows * self.pitch
    }

    /// Bytes of storage for elements of type `T`.
    pub const fn bytes<T>(&self) -> u32 {
        self.elements() * core::mem::size_of::<T>() as u32
    }
}

/// The bytes `len` elements of `T` take in shared memory.
pub const fn slice_bytes<T>(len: u32) -> u32 {
    len * core::mem::size_of::<T>() as u32
}

/// Hands out consecutive, aligned regions of this block's dynamic shared memory.
pub struct DynamicShared {
    base: *mut u8,
    offset: u32,
    limit: u32,
}

impl DynamicShared {
    /// The block's dynamic shared memory, nothing carved yet. Each call starts again at offset 0.
    #[inline(always)]
    pub fn new() -> Self {
        DynamicShared {
            base: super::backend::dynamic_shared_base(),
            offset: 0,
            limit: super::backend::dynamic_shared_bytes(),
        }
    }

    /// The next `len` elements of `T`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn slice<T: SharedWord>(&mut self, len: u32) -> SharedSlice<T> {
        SharedSlice {
            ptr: self.carve::<T>(len),
            len,
            _t: PhantomData,
        }
    }

    /// The next matrix laid out as `layout` says.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn matrix<T: SharedWord>(&mut self, layout: MatrixLayout) -> SharedMatrix<T> {
        SharedMatrix {
            ptr: self.carve::<T>(layout.elements()),
            layout,
            _t: PhantomData,
        }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn carve<T>(&mut self, len: u32) -> *mut T {
        let align = core::mem::align_of::<T>() as u32;
        let start = self.offset.next_multiple_of(align);
        let end = start as u64 + len as u64 * core::mem::size_of::<T>() as u64;
        // Emulator only: see the module documentation.
        if cfg!(not(target_arch = "nvptx64")) && end > self.limit as u64 {
            super::backend::shared_overflow(end, self.limit);
        }
        self.offset = end as u32;
        // SAFETY: start..end lies inside the block's dynamic shared memory, checked above.
        unsafe { self.base.add(start as usize).cast::<T>() }
    }
}

impl Default for DynamicShared {
    fn default() -> Self {
        Self::new()
    }
}

/// `len` elements of `T` in shared memory. Threads of the block order their accesses with
/// [`sync_threads`](super::sync_threads), as in CUDA.
#[derive(Clone, Copy)]
pub struct SharedSlice<T> {
    ptr: *mut T,
    len: u32,
    _t: PhantomData<T>,
}

impl<T: SharedWord> SharedSlice<T> {
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: u32) -> T {
        check_index(i, self.len, "slice");
        // SAFETY: i < len within the carved region (checked on the emulator; the kernel's contract
        // on the GPU).
        unsafe { super::backend::shared_load(self.ptr.add(i as usize)) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, i: u32, value: T) {
        check_index(i, self.len, "slice");
        // SAFETY: as in `get`.
        unsafe { super::backend::shared_store(self.ptr.add(i as usize), value) }
    }
}

/// A matrix in shared memory, indexed `(row, col)`; padding columns are not addressable.
#[derive(Clone, Copy)]
pub struct SharedMatrix<T> {
    ptr: *mut T,
    layout: MatrixLayout,
    _t: PhantomData<T>,
}

impl<T: SharedWord> SharedMatrix<T> {
    pub fn layout(&self) -> MatrixLayout {
        self.layout
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, row: u32, col: u32) -> T {
        check_index(row, self.layout.rows, "matrix row");
        check_index(col, self.layout.cols, "matrix column");
        // SAFETY: row < rows and col < cols (checked on the emulator; the kernel's contract on the GPU).
        unsafe { super::backend::shared_load(self.ptr.add((row * self.layout.pitch + col) as usize)) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, row: u32, col: u32, value: T) {
        check_index(row, self.layout.rows, "matrix row");
        check_index(col, self.layout.cols, "matrix column");
        // SAFETY: as in `get`.
        unsafe { super::backend::shared_store(self.ptr.add((row * self.layout.pitch + col) as usize), value) }
    }
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn check_index(index: u32, len: u32, what: &str) {
    #[cfg(not(target_arch = "nvptx64"))]
    if index >= len {
        panic!("shared memory out of bounds: {what} index {index}, but the view has {len}");
    }
    #[cfg(target_arch = "nvptx64")]
    let _ = (index, len, what);
}
