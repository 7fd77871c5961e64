//! Typed views of global memory: what a kernel takes for its arrays, as natural to index as a
//! pointer, with bounds.
//!
//! [`GlobalSlice`] (read) and [`GlobalSliceMut`] (read and write) are `len` elements;
//! [`GlobalMatrix`] and [`GlobalMatrixMut`] are `rows × cols` elements stored row-major with
//! `pitch` elements per row. Each is a kernel parameter (`kernel!` takes them, the launch passes a
//! pointer and the extents by value) and each access comes in two forms, as the shared views'
//! do:
//! * `get`, `set`, `at` check the index on both targets: on the emulator a bad index fails the
//!   launch with the index, the view's size and the parameter's name; on the GPU it traps (a
//!   compare and a branch per access).
//! * `get_unchecked`, `set_unchecked`, `at_unchecked` are `unsafe`: the caller promises the index
//!   is in bounds. The emulator still checks it; the GPU does not, so these compile to exactly what
//!   a pointer access does.
//!
//! On the emulator every access through a view of a launch's parameters is also recorded, so that
//! two threads writing one element, or one writing what another reads, without an atomic or an
//! ordering between them (a barrier in one block; between blocks a release and an acquire, as
//! `store_release` and `load_acquire`, or `thread_fence` around relaxed atomics) fail the launch
//! with both threads, both blocks and both lines ([the emulator](crate::emu)).
//!
//! On the host, [`GlobalSlice::new`] and [`GlobalSliceMut::new`] view a slice for an emulated
//! launch; `ptxkit_runtime` makes views of device, managed and host arrays for the checked launch.

use super::{AtomicAdd, AtomicOrd, AtomicWord, Float4};

/// An index into a view: `u32` (what kernels compute with) or `usize`.
pub trait GlobalIndex: Copy {
    fn index(self) -> usize;
}

impl GlobalIndex for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

impl GlobalIndex for usize {
    #[inline(always)]
    fn index(self) -> usize {
        self
    }
}

/// `len` elements of `T` in global memory, read only.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GlobalSlice<T> {
    ptr: *const T,
    len: usize,
}

/// `len` elements of `T` in global memory, read and written.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GlobalSliceMut<T> {
    ptr: *mut T,
    len: usize,
}

/// A `rows × cols` matrix of `T` in global memory, row-major, `pitch` elements from one row to
/// the next; read only.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GlobalMatrix<T> {
    ptr: *const T,
    extents: MatrixExtents,
}

/// A `rows × cols` matrix of `T` in global memory, as [`GlobalMatrix`], read and written.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GlobalMatrixMut<T> {
    ptr: *mut T,
    extents: MatrixExtents,
}

/// A global matrix's rows, columns and pitch (elements from one row to the next): its second PTX
/// parameter.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixExtents {
    pub rows: u32,
    pub cols: u32,
    pub pitch: u32,
}

/// One element of a read-only view, its index already checked (or promised).
#[derive(Clone, Copy)]
pub struct Element<T> {
    ptr: *const T,
}

/// One element of a writable view, its index already checked (or promised).
#[derive(Clone, Copy)]
pub struct ElementMut<T> {
    ptr: *mut T,
}

// What the two slice views share: their length, and views of their parts.
macro_rules! slice_extents {
    ($($view:ident),*) => {$(
        impl<T: Copy> $view<T> {
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.len
            }

            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The elements from `start` on (none when `start ≥ len`).
            #[inline(always)]
            pub fn tail(self, start: impl GlobalIndex) -> Self {
                let start = start.index();
                $view {
                    ptr: self.ptr.wrapping_add(start),
                    len: self.len.saturating_sub(start),
                }
            }

            /// The first `len` elements (all of them, where there are fewer).
            #[inline(always)]
            pub fn head(self, len: impl GlobalIndex) -> Self {
                $view {
                    ptr: self.ptr,
                    len: self.len.min(len.index()),
                }
            }

            /// The same bytes as elements of `U`, as many whole ones as fit: words of another
            /// type in one allocation (a scan's status words in its scratch, i32 moved as f32
            /// bits).
            ///
            /// # Safety
            /// Element 0 is aligned for `U` (the emulator checks it, the GPU faults), and what the
            /// kernel reads as `U` are valid `U`s.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn cast<U: Copy>(self) -> $view<U> {
                const { assert!(size_of::<U>() > 0, "a view of zero-sized elements") };
                #[cfg(not(target_arch = "nvptx64"))]
                super::emulated::check_view_aligned(self.ptr as *const u8, align_of::<U>());
                $view {
                    ptr: self.ptr.cast(),
                    len: self.len * size_of::<T>() / size_of::<U>(),
                }
            }
        }
    )*};
}
slice_extents!(GlobalSlice, GlobalSliceMut);

impl<T: Copy> GlobalSlice<T> {
    /// A view of `len` elements from `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for reads of `len` elements of `T` in global memory (device or managed
    /// memory on the GPU, host memory on the emulator) for as long as the view is used.
    #[inline(always)]
    pub const unsafe fn from_raw_parts(ptr: *const T, len: usize) -> Self {
        GlobalSlice { ptr, len }
    }

    /// A view of `values`, for an emulated launch (the launch's own contract says how long it
    /// may be used: for the launch).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(values: &[T]) -> Self {
        GlobalSlice {
            ptr: values.as_ptr(),
            len: values.len(),
        }
    }

    /// The address of element 0: for the device layer's pointer forms (`cp.async`, TMA), which
    /// the emulator does not check against the view.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Element `i`; a bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: impl GlobalIndex) -> T {
        self.at(i).get()
    }

    /// Element `i`, without a check on the GPU.
    ///
    /// # Safety
    /// `i < self.len()`. (The emulator checks it anyway and fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_unchecked(&self, i: impl GlobalIndex) -> T {
        // SAFETY: forwarded from the caller.
        unsafe { self.at_unchecked(i) }.get()
    }

    /// Element `i`, for the loads of the device layer's memory model; a bad index fails the
    /// launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn at(&self, i: impl GlobalIndex) -> Element<T> {
        let i = i.index();
        check_index(self.ptr.cast(), i, self.len, size_of::<T>());
        Element {
            // SAFETY: i < len, checked above on both targets: inside the view.
            ptr: unsafe { self.ptr.add(i) },
        }
    }

    /// [`GlobalSlice::at`] without a check on the GPU.
    ///
    /// # Safety
    /// As for [`GlobalSlice::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn at_unchecked(&self, i: impl GlobalIndex) -> Element<T> {
        let i = i.index();
        emulator_check_index(self.ptr.cast(), i, self.len, size_of::<T>());
        Element {
            // SAFETY: i < len by the caller's promise (checked on the emulator).
            ptr: unsafe { self.ptr.add(i) },
        }
    }
}

impl GlobalSlice<f32> {
    /// Elements `i..i + 4` in one 16-byte load (`ld.global.v4.f32`).
    ///
    /// # Safety
    /// `i + 4 ≤ len`, and element `i` is 16-byte aligned. (The emulator checks both.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get4_unchecked(&self, i: impl GlobalIndex) -> Float4 {
        let i = i.index();
        emulator_check_index(self.ptr.cast(), i.saturating_add(3), self.len, 4);
        // SAFETY: i + 4 ≤ len by the caller's promise.
        let ptr = unsafe { self.ptr.add(i) };
        #[cfg(not(target_arch = "nvptx64"))]
        super::emulated::check_aligned4(ptr, "load");
        // SAFETY: in bounds and 16-byte aligned by the caller's promise (the emulator checks both).
        unsafe { super::backend::global_load(ptr.cast::<Float4>()) }
    }
}

impl GlobalSlice<u8> {
    /// Bytes `i..i + 16` in one 16-byte load (`ld.global.v4.f32`), as four words: byte `4w + k`
    /// is bits `8k..8k + 8` of word `w`'s bits.
    ///
    /// # Safety
    /// `i + 16 ≤ len`, and byte `i` is 16-byte aligned. (The emulator checks both.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get16_unchecked(&self, i: impl GlobalIndex) -> Float4 {
        let i = i.index();
        emulator_check_index(self.ptr, i.saturating_add(15), self.len, 1);
        // SAFETY: i + 16 ≤ len by the caller's promise.
        let ptr = unsafe { self.ptr.add(i) };
        #[cfg(not(target_arch = "nvptx64"))]
        super::emulated::check_aligned4(ptr.cast::<f32>(), "load");
        // SAFETY: in bounds and 16-byte aligned by the caller's promise (the emulator checks both).
        unsafe { super::backend::global_load(ptr.cast::<Float4>()) }
    }
}

impl<T: Copy> GlobalSliceMut<T> {
    /// A view of `len` elements from `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `len` elements of `T` in global memory for as long
    /// as the view is used.
    #[inline(always)]
    pub const unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        GlobalSliceMut { ptr, len }
    }

    /// A view of `values`, for an emulated launch.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(values: &mut [T]) -> Self {
        GlobalSliceMut {
            ptr: values.as_mut_ptr(),
            len: values.len(),
        }
    }

    /// The address of element 0, for the device layer's pointer forms.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The same elements, read only.
    #[inline(always)]
    pub fn as_const(self) -> GlobalSlice<T> {
        GlobalSlice {
            ptr: self.ptr,
            len: self.len,
        }
    }

    /// Element `i`; a bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: impl GlobalIndex) -> T {
        self.as_const().get(i)
    }

    /// Stores `value` into element `i`; a bad index fails the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, i: impl GlobalIndex, value: T) {
        self.at(i).set(value)
    }

    /// # Safety
    /// `i < self.len()`. (The emulator checks it anyway and fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_unchecked(&self, i: impl GlobalIndex) -> T {
        // SAFETY: forwarded from the caller.
        unsafe { self.as_const().get_unchecked(i) }
    }

    /// # Safety
    /// As for [`GlobalSliceMut::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set_unchecked(&self, i: impl GlobalIndex, value: T) {
        // SAFETY: forwarded from the caller.
        unsafe { self.at_unchecked(i) }.set(value)
    }

    /// Element `i`, for atomics and the loads and stores of the memory model; a bad index fails
    /// the launch (emulator) or traps (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn at(&self, i: impl GlobalIndex) -> ElementMut<T> {
        let i = i.index();
        check_index(self.ptr.cast_const().cast(), i, self.len, size_of::<T>());
        ElementMut {
            // SAFETY: i < len, checked above on both targets: inside the view.
            ptr: unsafe { self.ptr.add(i) },
        }
    }

    /// [`GlobalSliceMut::at`] without a check on the GPU.
    ///
    /// # Safety
    /// As for [`GlobalSliceMut::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn at_unchecked(&self, i: impl GlobalIndex) -> ElementMut<T> {
        let i = i.index();
        emulator_check_index(self.ptr.cast_const().cast(), i, self.len, size_of::<T>());
        ElementMut {
            // SAFETY: i < len by the caller's promise (checked on the emulator).
            ptr: unsafe { self.ptr.add(i) },
        }
    }
}

impl GlobalSliceMut<f32> {
    /// Elements `i..i + 4` in one 16-byte load.
    ///
    /// # Safety
    /// As for [`GlobalSlice::get4_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get4_unchecked(&self, i: impl GlobalIndex) -> Float4 {
        // SAFETY: forwarded from the caller.
        unsafe { self.as_const().get4_unchecked(i) }
    }

    /// Stores `value` into elements `i..i + 4` in one 16-byte store (`st.global.v4.f32`).
    ///
    /// # Safety
    /// As for [`GlobalSlice::get4_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set4_unchecked(&self, i: impl GlobalIndex, value: Float4) {
        let i = i.index();
        emulator_check_index(self.ptr.cast_const().cast(), i.saturating_add(3), self.len, 4);
        // SAFETY: i + 4 ≤ len by the caller's promise.
        let ptr = unsafe { self.ptr.add(i) };
        #[cfg(not(target_arch = "nvptx64"))]
        super::emulated::check_aligned4(ptr, "store");
        // SAFETY: in bounds and 16-byte aligned by the caller's promise (the emulator checks both).
        unsafe { super::backend::global_write(ptr.cast::<Float4>(), value) }
    }
}

impl<T: Copy> Element<T> {
    /// The element (`ld.global`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(self) -> T {
        // SAFETY: in bounds: checked (or promised) when the element was taken.
        unsafe { super::backend::global_load(self.ptr) }
    }

    /// The element's address, for the device layer's pointer forms.
    #[inline(always)]
    pub fn as_ptr(self) -> *const T {
        self.ptr
    }
}

impl<T: AtomicWord> Element<T> {
    /// [`load_acquire`](super::load_acquire) of the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn load_acquire(self) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        super::backend::global_atomic_access(self.ptr.cast(), size_of::<T>(), false);
        // SAFETY: in bounds, as for `get`.
        unsafe { super::load_acquire(self.ptr) }
    }

    /// [`load_relaxed`](super::load_relaxed) of the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn load_relaxed(self) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        super::backend::global_atomic_access(self.ptr.cast(), size_of::<T>(), false);
        // SAFETY: in bounds, as for `get`.
        unsafe { super::load_relaxed(self.ptr) }
    }
}

impl<T: Copy> ElementMut<T> {
    /// The element (`ld.global`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(self) -> T {
        Element { ptr: self.ptr }.get()
    }

    /// Stores `value` (`st.global`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(self, value: T) {
        // SAFETY: in bounds: checked (or promised) when the element was taken.
        unsafe { super::backend::global_write(self.ptr, value) }
    }

    /// The element's address, for the device layer's pointer forms.
    #[inline(always)]
    pub fn as_ptr(self) -> *mut T {
        self.ptr
    }

    /// Records an atomic access to the element on the emulator (it then races only with plain
    /// accesses); nothing on the GPU.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn atomic(self, writes: bool) -> *mut T {
        #[cfg(not(target_arch = "nvptx64"))]
        super::backend::global_atomic_access(self.ptr.cast_const().cast(), size_of::<T>(), writes);
        #[cfg(target_arch = "nvptx64")]
        let _ = writes;
        self.ptr
    }
}

impl<T: AtomicWord> ElementMut<T> {
    /// [`load_acquire`](super::load_acquire) of the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn load_acquire(self) -> T {
        // SAFETY: in bounds, as for `get`.
        unsafe { super::load_acquire(self.atomic(false)) }
    }

    /// [`load_relaxed`](super::load_relaxed) of the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn load_relaxed(self) -> T {
        // SAFETY: in bounds, as for `get`.
        unsafe { super::load_relaxed(self.atomic(false)) }
    }

    /// [`store_release`](super::store_release) into the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn store_release(self, value: T) {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::store_release(self.atomic(true), value) }
    }

    /// [`store_relaxed`](super::store_relaxed) into the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn store_relaxed(self, value: T) {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::store_relaxed(self.atomic(true), value) }
    }

    /// [`atomic_exch`](super::atomic_exch) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_exch(self, value: T) -> T {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::atomic_exch(self.atomic(true), value) }
    }

    /// [`atomic_cas`](super::atomic_cas) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_cas(self, expected: T, new: T) -> T {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::atomic_cas(self.atomic(true), expected, new) }
    }
}

impl<T: AtomicAdd> ElementMut<T> {
    /// [`atomic_add`](super::atomic_add) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_add(self, value: T) -> T {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::atomic_add(self.atomic(true), value) }
    }

    /// [`red_add`](super::red_add) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn red_add(self, value: T) {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::red_add(self.atomic(true), value) }
    }
}

impl<T: AtomicOrd> ElementMut<T> {
    /// [`atomic_min`](super::atomic_min) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_min(self, value: T) -> T {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::atomic_min(self.atomic(true), value) }
    }

    /// [`atomic_max`](super::atomic_max) on the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn atomic_max(self, value: T) -> T {
        // SAFETY: in bounds, as for `set`.
        unsafe { super::atomic_max(self.atomic(true), value) }
    }
}

macro_rules! matrix_common {
    ($view:ident, $ptr:ty, $slice:ident) => {
        impl<T: Copy> $view<T> {
            /// A view of `rows × cols` elements from `ptr`, `pitch` elements from one row to the
            /// next.
            ///
            /// # Safety
            /// `ptr` is valid for every element `row · pitch + col` with `row < rows` and
            /// `col < cols`, for as long as the view is used (for writes too, for the writable
            /// view); `pitch ≥ cols`.
            #[inline(always)]
            pub const unsafe fn from_raw_parts(ptr: $ptr, rows: u32, cols: u32, pitch: u32) -> Self {
                $view {
                    ptr,
                    extents: MatrixExtents { rows, cols, pitch },
                }
            }

            #[inline(always)]
            pub fn rows(&self) -> u32 {
                self.extents.rows
            }

            #[inline(always)]
            pub fn cols(&self) -> u32 {
                self.extents.cols
            }

            #[inline(always)]
            pub fn pitch(&self) -> u32 {
                self.extents.pitch
            }

            /// Row `row` as a slice of `cols` elements (none when `row ≥ rows`).
            #[inline(always)]
            pub fn row(self, row: u32) -> $slice<T> {
                $slice {
                    ptr: self.ptr.wrapping_add(row as usize * self.extents.pitch as usize),
                    len: if row < self.extents.rows {
                        self.extents.cols as usize
                    } else {
                        0
                    },
                }
            }

            /// Element `(row, col)`; a bad index fails the launch (emulator) or traps (GPU).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn get(&self, row: u32, col: u32) -> T {
                check_index(
                    (self.ptr as *const T).cast(),
                    row as usize,
                    self.extents.rows as usize,
                    MATRIX_ROW,
                );
                self.row(row).get(col)
            }

            /// Element `(row, col)`, without a check on the GPU.
            ///
            /// # Safety
            /// `row < rows` and `col < cols`. (The emulator checks both and fails the launch.)
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn get_unchecked(&self, row: u32, col: u32) -> T {
                emulator_check_index(
                    (self.ptr as *const T).cast(),
                    row as usize,
                    self.extents.rows as usize,
                    MATRIX_ROW,
                );
                // SAFETY: forwarded from the caller.
                unsafe { self.row(row).get_unchecked(col) }
            }
        }
    };
}

/// `element_bytes` of a report about a matrix's row index, rather than an element's.
const MATRIX_ROW: usize = 0;

matrix_common!(GlobalMatrix, *const T, GlobalSlice);
matrix_common!(GlobalMatrixMut, *mut T, GlobalSliceMut);

impl<T: Copy> GlobalMatrix<T> {
    /// A `rows × cols` view of `values` (dense rows), for an emulated launch. Panics where
    /// `values` is shorter than `rows · cols`.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(values: &[T], rows: u32, cols: u32) -> Self {
        assert!(
            values.len() >= rows as usize * cols as usize,
            "a {rows}×{cols} matrix needs {} elements, and the slice has {}",
            rows as usize * cols as usize,
            values.len()
        );
        GlobalMatrix {
            ptr: values.as_ptr(),
            extents: MatrixExtents {
                rows,
                cols,
                pitch: cols,
            },
        }
    }
}

impl<T: Copy> GlobalMatrixMut<T> {
    /// A `rows × cols` view of `values` (dense rows), for an emulated launch. Panics where
    /// `values` is shorter than `rows · cols`.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(values: &mut [T], rows: u32, cols: u32) -> Self {
        assert!(
            values.len() >= rows as usize * cols as usize,
            "a {rows}×{cols} matrix needs {} elements, and the slice has {}",
            rows as usize * cols as usize,
            values.len()
        );
        GlobalMatrixMut {
            ptr: values.as_mut_ptr(),
            extents: MatrixExtents {
                rows,
                cols,
                pitch: cols,
            },
        }
    }

    /// The same elements, read only.
    #[inline(always)]
    pub fn as_const(self) -> GlobalMatrix<T> {
        GlobalMatrix {
            ptr: self.ptr,
            extents: self.extents,
        }
    }

    /// Stores `value` into element `(row, col)`; a bad index fails the launch (emulator) or traps
    /// (GPU).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&self, row: u32, col: u32, value: T) {
        check_index(
            self.ptr.cast_const().cast(),
            row as usize,
            self.extents.rows as usize,
            MATRIX_ROW,
        );
        self.row(row).set(col, value)
    }

    /// # Safety
    /// As for [`GlobalMatrixMut::get_unchecked`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set_unchecked(&self, row: u32, col: u32, value: T) {
        emulator_check_index(
            self.ptr.cast_const().cast(),
            row as usize,
            self.extents.rows as usize,
            MATRIX_ROW,
        );
        // SAFETY: forwarded from the caller.
        unsafe { self.row(row).set_unchecked(col, value) }
    }
}

/// The checked accessors' test: on both targets. `element_bytes` is 0 for a matrix's row.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn check_index(base: *const u8, index: usize, len: usize, element_bytes: usize) {
    #[cfg(not(target_arch = "nvptx64"))]
    emulator_check_index(base, index, len, element_bytes);
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (base, element_bytes);
        if index >= len {
            super::backend::trap();
        }
    }
}

/// The unchecked accessors' test: on the emulator only.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn emulator_check_index(base: *const u8, index: usize, len: usize, element_bytes: usize) {
    #[cfg(not(target_arch = "nvptx64"))]
    if index >= len {
        super::backend::global_out_of_bounds(base as usize, index, len, element_bytes);
    }
    #[cfg(target_arch = "nvptx64")]
    let _ = (base, index, len, element_bytes);
}

// The four views as kernel parameters: the pointer, then the extents, each a PTX parameter of its
// own, so that the compiler knows the pointer is global memory (see `KernelParam`).
macro_rules! view_params {
    ($($view:ident: $head:ty, $extents:ident: $tail:ty, writable $writable:literal;)*) => {$(
        // SAFETY: the parts are the fields `ptr` and the extents (a `usize`, one `.u64`
        // parameter; or `MatrixExtents`, a `#[repr(C)]` struct of three u32, one
        // `.param .align 4 .b8 [12]`), in order, whose bytes those parameters read; `join` puts
        // them back. The launch's contract makes the pointer valid for the extents where the
        // kernel runs.
        unsafe impl<T: Copy> crate::KernelParam for $view<T> {
            type Head = $head;
            type Tail = $tail;

            #[inline(always)]
            fn join(ptr: $head, $extents: $tail) -> Self {
                $view { ptr, $extents }
            }

            #[cfg(not(target_arch = "nvptx64"))]
            fn parts(&mut self) -> ([*mut core::ffi::c_void; 2], usize) {
                ([(&raw mut self.ptr).cast(), (&raw mut self.$extents).cast()], 2)
            }

            #[cfg(not(target_arch = "nvptx64"))]
            fn global_region(&self) -> Option<crate::params::GlobalRegion> {
                Some(crate::params::GlobalRegion::of(self.ptr as *const T, self.$extents.elements(), $writable))
            }
        }
    )*};
}
view_params! {
    GlobalSlice: *const T, len: usize, writable false;
    GlobalSliceMut: *mut T, len: usize, writable true;
    GlobalMatrix: *const T, extents: MatrixExtents, writable false;
    GlobalMatrixMut: *mut T, extents: MatrixExtents, writable true;
}

/// A view's extents as the emulator's record of it counts them: elements from the first to just
/// past the last.
#[cfg(not(target_arch = "nvptx64"))]
trait Extents {
    fn elements(&self) -> usize;
}

#[cfg(not(target_arch = "nvptx64"))]
impl Extents for usize {
    fn elements(&self) -> usize {
        *self
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl Extents for MatrixExtents {
    fn elements(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows as usize - 1) * self.pitch as usize + self.cols as usize
        }
    }
}
