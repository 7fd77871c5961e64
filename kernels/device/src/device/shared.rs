//! Dynamic shared memory carved into typed views whose bounds are known.
//!
//! All of a kernel's shared memory is dynamic (sized at launch). A kernel declares what it keeps
//! there once, with [`shared_memory!`](crate::shared_memory): the same declaration gives the bytes
//! the registry launches with (`BYTES`) and carves the views in the kernel (`carve()`), so the two
//! cannot disagree.
//!
//! Element access comes in two forms:
//! * `get` / `set` (and `atomic_add`) check the index on both targets: on the emulator a bad index
//!   fails the launch with the index and the view's size; on the GPU it traps (a compare and a
//!   branch per access).
//! * `get_unchecked` / `set_unchecked` (and `atomic_add_unchecked`) are `unsafe`: the caller
//!   promises the index is in bounds. The emulator still checks and reports a bad index; the GPU
//!   does not check (an out-of-bounds access there reads or writes another part of the block's
//!   shared memory, or faults). Hot loops whose indices are in bounds by construction use these,
//!   as CUDA C does.
//!
//! Carving past what the launch gave fails the launch on the emulator; on the GPU it is not checked
//! (even that one check at kernel start cost 2.7 % of shared_mem_add on the H200: it delays every
//! warp's first loads; docs/perf-log.md): there the launch shape built from the kernel's own
//! `BYTES` is the guarantee, and the emulator tests it.
//!
//! Accesses by different threads are ordered by [`sync_threads`](super::sync_threads), as in CUDA.
//! A race (two threads touching one word between barriers, one of them writing) gives unspecified
//! values on the GPU; the emulator reports it, and a read of a word no thread of the block has
//! written, with the element and both source lines.

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
    #[inline]
    pub const fn dense(rows: u32, cols: u32) -> Self {
        MatrixLayout {
            rows,
            cols,
            pitch: cols,
        }
    }

    /// Each row padded by one element, so that walking down a column of a 32-wide tile touches 32
    /// different banks instead of one (shared memory has 32 banks of 4 bytes).
    #[inline]
    pub const fn padded(rows: u32, cols: u32) -> Self {
        MatrixLayout {
            rows,
            cols,
            pitch: cols + 1,
        }
    }

    /// Elements of storage, padding included.
    #[inline]
    pub const fn elements(&self) -> u32 {
        self.rows * self.pitch
    }

    /// Bytes of storage for elements of type `T`.
    #[inline]
    pub const fn bytes<T>(&self) -> u32 {
        self.elements() * core::mem::size_of::<T>() as u32
    }
}

/// Where `len` elements of `T` go when carved after `offset` bytes: `(start, end)`, the start aligned
/// for `T`. The one piece of arithmetic behind both `BYTES` and `carve()`.
#[inline]
pub const fn region<T>(offset: u32, len: u32) -> (u32, u32) {
    let start = offset.next_multiple_of(core::mem::align_of::<T>() as u32);
    (start, start + len * core::mem::size_of::<T>() as u32)
}

/// Hands out consecutive, aligned regions of this block's dynamic shared memory.
/// [`shared_memory!`](crate::shared_memory) uses it; kernels may too, for layouts known only at run
/// time.
pub struct DynamicShared {
    base: *mut u8,
    offset: u32,
    /// The launch's bytes, which the emulator checks each carve against.
    #[cfg(not(target_arch = "nvptx64"))]
    limit: u32,
}

impl DynamicShared {
    /// The block's dynamic shared memory, nothing carved yet. Each call starts again at offset 0.
    #[inline(always)]
    pub fn new() -> Self {
        DynamicShared {
            base: super::backend::dynamic_shared_base(),
            offset: 0,
            #[cfg(not(target_arch = "nvptx64"))]
            limit: super::backend::dynamic_shared_bytes(),
        }
    }

    /// The next `len` elements of `T`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn slice<T: SharedWord>(&mut self, len: u32) -> SharedSlice<T> {
        self.named_slice("slice", len)
    }

    /// The next matrix laid out as `layout` says.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn matrix<T: SharedWord>(&mut self, layout: MatrixLayout) -> SharedMatrix<T> {
        self.named_matrix("matrix", layout)
    }

    /// [`DynamicShared::slice`], named `name` in the emulator's reports.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn named_slice<T: SharedWord>(&mut self, name: &'static str, len: u32) -> SharedSlice<T> {
        SharedSlice {
            ptr: self.carve::<T>(name, len, None),
            len,
            _t: PhantomData,
        }
    }

    /// [`DynamicShared::matrix`], named `name` in the emulator's reports.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn named_matrix<T: SharedWord>(&mut self, name: &'static str, layout: MatrixLayout) -> SharedMatrix<T> {
        SharedMatrix {
            ptr: self.carve::<T>(name, layout.elements(), Some((layout.cols, layout.pitch))),
            layout,
            _t: PhantomData,
        }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn carve<T>(&mut self, name: &'static str, len: u32, matrix: Option<(u32, u32)>) -> *mut T {
        let (start, end) = region::<T>(self.offset, len);
        // Emulator only: see the module documentation.
        #[cfg(not(target_arch = "nvptx64"))]
        {
            if end > self.limit {
                super::backend::shared_overflow(end as u64, self.limit);
            }
            super::backend::shared_carved(name, (start, end), core::mem::size_of::<T>() as u32, matrix);
        }
        #[cfg(target_arch = "nvptx64")]
        let _ = (name, matrix);
        self.offset = end;
        // SAFETY: start..end lies inside the block's dynamic shared memory: checked above on the
        // emulator; on the GPU, the launch gives the BYTES computed from this same layout.
        unsafe { self.base.add(start as usize).cast::<T>() }
    }
}

impl Default for DynamicShared {
    fn default() -> Self {
        Self::new()
    }
}

/// Declares what a kernel keeps in shared memory, once: a struct of views with `BYTES` (what the
/// launch must give, for the registry's `SharedMemory::of`) and `carve()` (the views, in the
/// kernel), both from the same list.
///
/// ```
/// use ptxkit::device::{MatrixLayout, SharedMatrix, SharedSlice};
/// ptxkit::shared_memory! {
///     /// A 32×33 tile and a row of sums.
///     pub struct Staging {
///         pub tile: SharedMatrix<f32> = MatrixLayout::padded(32, 32),
///         pub sums: SharedSlice<u32> = 32,
///     }
/// }
/// assert_eq!(Staging::BYTES, (32 * 33 + 32) * 4);
/// ```
///
/// The struct may take const and type parameters, which the shapes use (a generic kernel's tile
/// sizes and element type):
///
/// ```
/// use ptxkit::device::{MatrixLayout, SharedMatrix, SharedWord};
/// ptxkit::shared_memory! {
///     /// Two BM×BK tiles of T, double-buffered.
///     pub struct Tiles<T: SharedWord, const BM: u32, const BK: u32> {
///         pub current: SharedMatrix<T> = MatrixLayout::dense(BM, BK),
///         pub next: SharedMatrix<T> = MatrixLayout::dense(BM, BK),
///     }
/// }
/// assert_eq!(Tiles::<f32, 64, 8>::BYTES, 2 * 64 * 8 * 4);
/// assert_eq!(Tiles::<u64, 128, 16>::BYTES, 2 * 128 * 16 * 8);
/// ```
#[macro_export]
macro_rules! shared_memory {
    // Generic parameters, one at a time, into their declarations and names.
    (@generics $meta:tt $vis:vis $name:ident [$($decl:tt)*] [$($names:tt)*] const $p:ident : $t:ty , $($rest:tt)*) => {
        $crate::shared_memory!(@generics $meta $vis $name [$($decl)* const $p: $t,] [$($names)* $p,] $($rest)*);
    };
    (@generics $meta:tt $vis:vis $name:ident [$($decl:tt)*] [$($names:tt)*] const $p:ident : $t:ty > $($rest:tt)*) => {
        $crate::shared_memory!(@define $meta $vis $name [$($decl)* const $p: $t,] [$($names)* $p,] $($rest)*);
    };
    (@generics $meta:tt $vis:vis $name:ident [$($decl:tt)*] [$($names:tt)*]
        $p:ident $(: $($b1:ident)::+ $(+ $($b2:ident)::+)*)? , $($rest:tt)*
    ) => {
        $crate::shared_memory!(@generics $meta $vis $name [$($decl)* $p $(: $($b1)::+ $(+ $($b2)::+)*)?,] [$($names)* $p,] $($rest)*);
    };
    (@generics $meta:tt $vis:vis $name:ident [$($decl:tt)*] [$($names:tt)*]
        $p:ident $(: $($b1:ident)::+ $(+ $($b2:ident)::+)*)? > $($rest:tt)*
    ) => {
        $crate::shared_memory!(@define $meta $vis $name [$($decl)* $p $(: $($b1)::+ $(+ $($b2)::+)*)?,] [$($names)* $p,] $($rest)*);
    };
    (@define [$(#[$meta:meta])*] $vis:vis $name:ident [$($decl:tt)*] [$($names:tt)*] {
        $($field_vis:vis $field:ident : $view:ty = $shape:expr),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        $vis struct $name<$($decl)*> {
            $($field_vis $field: $view),+
        }

        impl<$($decl)*> $name<$($names)*> {
            /// Bytes of dynamic shared memory the views take, alignment included: launch with this.
            #[allow(unused_assignments)]
            pub const BYTES: u32 = {
                let mut end = 0u32;
                $(end = <$view>::region_end(end, $shape);)+
                end
            };

            /// This block's dynamic shared memory, carved into the views in order.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn carve() -> Self {
                let mut shared = $crate::device::DynamicShared::new();
                $name {
                    $($field: <$view>::carve_from(&mut shared, ::core::stringify!($field), $shape)),+
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident < $($rest:tt)*
    ) => {
        $crate::shared_memory!(@generics [$(#[$meta])*] $vis $name [] [] $($rest)*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { $($fields:tt)* }
    ) => {
        $crate::shared_memory!(@define [$(#[$meta])*] $vis $name [] [] { $($fields)* });
    };
}

/// `len` elements of `T` in shared memory.
#[derive(Clone, Copy)]
pub struct SharedSlice<T> {
    ptr: *mut T,
    len: u32,
    _t: PhantomData<T>,
}

impl<T: SharedWord> SharedSlice<T> {
    /// Where a slice of `len` elements carved after `offset` bytes ends (for `shared_memory!`).
    #[inline]
    pub const fn region_end(offset: u32, len: u32) -> u32 {
        region::<T>(offset, len).1
    }

    /// The next `len` elements of `shared`, named `name` (for `shared_memory!`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn carve_from(shared: &mut DynamicShared, name: &'static str, len: u32) -> Self {
        shared.named_slice(name, len)
    }

    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of element `i`, for instructions that take shared addresses of their own
    /// (`mbarrier`). Checked on the emulator.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn element_ptr(&self, i: u32) -> *const T {
        emulator_check_index(i, self.len, "slice");
        self.ptr.wrapping_add(i as usize)
    }

    /// Element `i`; a bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: u32) -> T {
        check_index(i, self.len, "slice");
        // SAFETY: i < len, checked above on both targets.
        unsafe { self.get_unchecked(i) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, i: u32, value: T) {
        check_index(i, self.len, "slice");
        // SAFETY: as in `get`.
        unsafe { self.set_unchecked(i, value) }
    }

    /// Element `i`, without a check on the GPU.
    ///
    /// # Safety
    /// `i < self.len()`. (The emulator checks it anyway and fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_unchecked(&self, i: u32) -> T {
        emulator_check_index(i, self.len, "slice");
        // SAFETY: i < len by the caller's promise, inside the carved region.
        unsafe { super::backend::shared_load(self.ptr.add(i as usize)) }
    }

    /// Element `i`, read every time it is asked for (`ld.volatile.shared`): for probes that time
    /// the reads themselves, which the compiler would otherwise merge.
    ///
    /// # Safety
    /// As for [`SharedSlice::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_volatile(&self, i: u32) -> T {
        emulator_check_index(i, self.len, "slice");
        // SAFETY: as in `get_unchecked`.
        unsafe { super::backend::shared_load_volatile(self.ptr.add(i as usize)) }
    }

    /// # Safety
    /// As for [`SharedSlice::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set_unchecked(&self, i: u32, value: T) {
        emulator_check_index(i, self.len, "slice");
        // SAFETY: as in `get_unchecked`.
        unsafe { super::backend::shared_store(self.ptr.add(i as usize), value) }
    }
}

impl<T: super::SharedAtomicAdd> SharedSlice<T> {
    /// `atomicAdd(&s[i], value)`: adds `value` to element `i` indivisibly (`atom.shared.add`) and
    /// returns the old value. Atomics on one element do not race with each other; they do race
    /// with plain reads and writes of it between the same barriers (the emulator reports those).
    /// A bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_add(&self, i: u32, value: T) -> T {
        check_index(i, self.len, "slice");
        // SAFETY: i < len, checked above on both targets: inside the carved region.
        unsafe { T::shared_atomic_add(self.ptr.add(i as usize), value) }
    }

    /// [`SharedSlice::atomic_add`] without a check on the GPU.
    ///
    /// # Safety
    /// `i < self.len()`. (The emulator checks it anyway and fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn atomic_add_unchecked(&self, i: u32, value: T) -> T {
        emulator_check_index(i, self.len, "slice");
        // SAFETY: i < len by the caller's promise, inside the carved region.
        unsafe { T::shared_atomic_add(self.ptr.add(i as usize), value) }
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
    /// Where a matrix laid out as `layout` carved after `offset` bytes ends (for `shared_memory!`).
    #[inline]
    pub const fn region_end(offset: u32, layout: MatrixLayout) -> u32 {
        region::<T>(offset, layout.elements()).1
    }

    /// The next matrix of `shared`, named `name` (for `shared_memory!`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn carve_from(shared: &mut DynamicShared, name: &'static str, layout: MatrixLayout) -> Self {
        shared.named_matrix(name, layout)
    }

    #[inline]
    pub fn layout(&self) -> MatrixLayout {
        self.layout
    }

    /// The part of the matrix from `(row, col)` on, as a matrix whose `(0, 0)` is this one's
    /// `(row, col)` (same pitch; fewer rows and columns). A thread that reads many elements at
    /// fixed distances from one corner of its own indexes the window with constants, which the
    /// compiler folds into the loads' immediate offsets (`LDS [R+0x840]`), instead of adding the
    /// corner to every index (two instructions per load in matmul's fragments). Past the matrix's
    /// end the window has no rows or columns: every checked access to it fails.
    #[inline(always)]
    pub fn window(&self, row: u32, col: u32) -> Self {
        SharedMatrix {
            ptr: self.ptr.wrapping_add((row * self.layout.pitch + col) as usize),
            layout: MatrixLayout {
                rows: self.layout.rows.saturating_sub(row),
                cols: self.layout.cols.saturating_sub(col),
                pitch: self.layout.pitch,
            },
            _t: PhantomData,
        }
    }

    /// The address of element `(row, col)`, for instructions that take shared addresses of their
    /// own (`wgmma`'s descriptors). Checked on the emulator.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn element_ptr(&self, row: u32, col: u32) -> *const T {
        emulator_check_index(row, self.layout.rows, "matrix row");
        emulator_check_index(col, self.layout.cols, "matrix column");
        self.ptr.wrapping_add((row * self.layout.pitch + col) as usize)
    }

    /// Element `(row, col)`; a bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, row: u32, col: u32) -> T {
        check_index(row, self.layout.rows, "matrix row");
        check_index(col, self.layout.cols, "matrix column");
        // SAFETY: row < rows and col < cols, checked above on both targets.
        unsafe { self.get_unchecked(row, col) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, row: u32, col: u32, value: T) {
        check_index(row, self.layout.rows, "matrix row");
        check_index(col, self.layout.cols, "matrix column");
        // SAFETY: as in `get`.
        unsafe { self.set_unchecked(row, col, value) }
    }

    /// Element `(row, col)`, without a check on the GPU.
    ///
    /// # Safety
    /// `row < rows` and `col < cols` of the layout. (The emulator checks it anyway and fails the
    /// launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_unchecked(&self, row: u32, col: u32) -> T {
        emulator_check_index(row, self.layout.rows, "matrix row");
        emulator_check_index(col, self.layout.cols, "matrix column");
        // SAFETY: in bounds by the caller's promise, inside the carved region.
        unsafe { super::backend::shared_load(self.ptr.add((row * self.layout.pitch + col) as usize)) }
    }

    /// # Safety
    /// As for [`SharedMatrix::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set_unchecked(&self, row: u32, col: u32, value: T) {
        emulator_check_index(row, self.layout.rows, "matrix row");
        emulator_check_index(col, self.layout.cols, "matrix column");
        // SAFETY: as in `get_unchecked`.
        unsafe { super::backend::shared_store(self.ptr.add((row * self.layout.pitch + col) as usize), value) }
    }
}

impl SharedMatrix<f32> {
    /// Elements `(row, col..col + 4)` in one 16-byte access (`ld.shared.v4.f32`, an LDS.128): a
    /// quarter of the instructions of four scalar reads.
    ///
    /// # Safety
    /// `row < rows`, `col + 4 ≤ cols`, and the element 16-byte aligned: `col` and the pitch
    /// multiples of 4, the matrix carved at a 16-byte offset. (The emulator checks all of it and
    /// fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get4_unchecked(&self, row: u32, col: u32) -> super::Float4 {
        let ptr = self.vector_at(row, col);
        // SAFETY: in bounds and aligned by the caller's promise.
        unsafe { super::backend::shared_load(ptr) }
    }

    /// Stores `value` into elements `(row, col..col + 4)` in one 16-byte access (STS.128).
    ///
    /// # Safety
    /// As for [`SharedMatrix::get4_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set4_unchecked(&self, row: u32, col: u32, value: super::Float4) {
        let ptr = self.vector_at(row, col);
        // SAFETY: as in `get4_unchecked`.
        unsafe { super::backend::shared_store(ptr, value) }
    }
}

/// Addresses of 4-byte elements and of 16-byte vectors of them (the async copies' and `ldmatrix`'s).
impl<T: super::Word32> SharedMatrix<T> {
    /// The matrix's first element: the async copies address shared memory from it (its window
    /// address is computed once, each copy adds its offset).
    #[inline(always)]
    pub(super) fn base(&self) -> *const T {
        self.ptr
    }

    /// The address of element `(row, col)`, checked on the emulator.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(super) fn element_at(&self, row: u32, col: u32) -> *mut T {
        emulator_check_index(row, self.layout.rows, "matrix row");
        emulator_check_index(col, self.layout.cols, "matrix column");
        self.ptr.wrapping_add((row * self.layout.pitch + col) as usize)
    }

    /// The address of `(row, col)` as a 16-byte vector, checked on the emulator.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(super) fn vector_at(&self, row: u32, col: u32) -> *mut super::Float4 {
        emulator_check_index(row, self.layout.rows, "matrix row");
        emulator_check_index(
            col.saturating_add(3),
            self.layout.cols,
            "matrix column (of a 16-byte access)",
        );
        let ptr = self.ptr.wrapping_add((row * self.layout.pitch + col) as usize);
        #[cfg(not(target_arch = "nvptx64"))]
        if !(ptr as usize).is_multiple_of(16) {
            panic!(
                "misaligned 16-byte shared-memory access at matrix ({row}, {col}): the pitch ({}) and the column must be multiples of 4, the matrix carved at a 16-byte offset",
                self.layout.pitch
            );
        }
        ptr.cast()
    }
}

/// The checked accessors' test: on both targets.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn check_index(index: u32, len: u32, what: &str) {
    #[cfg(not(target_arch = "nvptx64"))]
    emulator_check_index(index, len, what);
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = what;
        if index >= len {
            super::backend::trap();
        }
    }
}

/// The unchecked accessors' test: on the emulator only.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn emulator_check_index(index: u32, len: u32, what: &str) {
    #[cfg(not(target_arch = "nvptx64"))]
    if index >= len {
        panic!("shared memory out of bounds: {what} index {index}, but the view has {len}");
    }
    #[cfg(target_arch = "nvptx64")]
    let _ = (index, len, what);
}
