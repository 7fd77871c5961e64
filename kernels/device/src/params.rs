//! A kernel's parameter list as one typed value: a tuple of views, pointers, scalars and
//! `#[repr(C)]` structs in the order of the kernel's parameters, as cudarc's examples pass them.
//! One generic launch then serves every kernel with that signature, on the GPU (each field's
//! parts become its `.param`s) and on the emulator (the tuple is the kernel function's arguments).

/// One kernel parameter: a pointer (`.param .u64`), a 4- or 8-byte number, or a struct of them
/// passed by value (`.param .align A .b8 name[size]`).
///
/// A struct of your own is a parameter once it is `#[repr(C)]`, `Copy`, and declared one:
///
/// ```
/// /// What a kernel takes by value.
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// pub struct Scale {
///     pub factor: f32,
///     pub n: u32,
///     pub offset: f64,
/// }
///
/// // SAFETY: repr(C) of numbers: the same bytes on the host and in the kernel.
/// unsafe impl ptxkit::Param for Scale {}
/// ```
///
/// The typed views of global memory ([`GlobalSlice`](crate::device::GlobalSlice) and the others)
/// are parameters too, of their own kind ([`KernelParam`]).
///
/// # Safety
/// The value's bytes on the host are what the kernel reads as that parameter on nvptx64: the type
/// is a primitive, a raw pointer, or `#[repr(C)]` with only such fields (C's layout is the same on
/// the host and on nvptx64, both 64-bit and little-endian), and pointers in it are valid where the
/// kernel runs (device or managed memory on the GPU).
pub unsafe trait Param: Copy {}

macro_rules! params {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number: its bytes are the PTX parameter's.
        unsafe impl Param for $t {}
    )*};
}
params!(u32, i32, f32, u64, i64, f64);
// SAFETY: a 64-bit address either way (`.param .u64`); its validity is the launch's contract.
unsafe impl<T> Param for *const T {}
// SAFETY: as for `*const T`.
unsafe impl<T> Param for *mut T {}

/// A kernel parameter as the PTX entry takes it: one or two PTX parameters, its head and its tail.
/// A [`Param`] is its own head, with no tail (no PTX parameter at all). A typed view of global
/// memory is its pointer, then its extents: a pointer that is a parameter of its own is one the
/// compiler knows lies in global memory (`ld.global`, `LDG`), where a pointer inside a struct
/// parameter is loaded and stored through the generic address space (`LD`, `ST`). `kernel!` writes
/// the entry so, and the launch passes each part's bytes so.
///
/// # Safety
/// `parts` returns pointers to the bytes of the head, then of the tail where it has any, as the
/// PTX parameters of those types read them; `join` of those parts is the parameter.
pub unsafe trait KernelParam: Copy {
    type Head: Copy;
    type Tail: Copy;

    /// The parameter from its parts, as the PTX entry received them.
    fn join(head: Self::Head, tail: Self::Tail) -> Self;

    /// Pointers to the bytes of the PTX parameters this one is, in order; the first `len` are
    /// valid.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    fn parts(&mut self) -> ([*mut core::ffi::c_void; 2], usize);

    /// The global memory the parameter views, for the emulator's checks.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    fn global_region(&self) -> Option<GlobalRegion> {
        None
    }
}

/// The tail of a parameter that has none: no PTX parameter (a zero-sized argument of a kernel
/// entry is not passed).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct NoTail;

// SAFETY: the one part is the value itself, whose bytes are its PTX parameter's (`Param`).
unsafe impl<T: Param> KernelParam for T {
    type Head = T;
    type Tail = NoTail;

    #[inline(always)]
    fn join(head: T, _: NoTail) -> T {
        head
    }

    #[cfg(not(target_arch = "nvptx64"))]
    fn parts(&mut self) -> ([*mut core::ffi::c_void; 2], usize) {
        ([(self as *mut T).cast(), core::ptr::null_mut()], 1)
    }
}

/// Where a view parameter's elements lie, for the emulator's record of the launch's accesses.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalRegion {
    pub start: usize,
    pub bytes: usize,
    pub element_bytes: usize,
    pub writable: bool,
}

#[cfg(not(target_arch = "nvptx64"))]
impl GlobalRegion {
    /// `len` elements of `T` from `ptr`.
    pub fn of<T>(ptr: *const T, len: usize, writable: bool) -> Self {
        GlobalRegion {
            start: ptr as usize,
            bytes: len.saturating_mul(size_of::<T>()),
            element_bytes: size_of::<T>().max(1),
            writable,
        }
    }
}

/// Most parameters a kernel takes.
pub const MAX_PARAMS: usize = 12;

/// Most PTX parameters a kernel's entry has: a view is two.
pub const MAX_PTX_PARAMS: usize = 2 * MAX_PARAMS;

/// A kernel's parameters: a tuple of [`KernelParam`]s.
///
/// # Safety
/// `pointers` returns one pointer per PTX parameter of the entry `kernel!` writes for these
/// types, in order, each to that parameter's bytes: `cuLaunchKernel` reads each through them.
pub unsafe trait Params: Copy {
    /// Pointers to the PTX parameters' bytes, in order, as `cuLaunchKernel` takes them; the first
    /// `len` are valid.
    #[cfg(not(target_arch = "nvptx64"))]
    fn pointers(&mut self) -> ([*mut core::ffi::c_void; MAX_PTX_PARAMS], usize);
}

macro_rules! tuple_params {
    ($($name:ident : $index:tt),+) => {
        // SAFETY: each field's parts, in order (`KernelParam::parts`).
        unsafe impl<$($name: KernelParam),+> Params for ($($name,)+) {
            #[cfg(not(target_arch = "nvptx64"))]
            fn pointers(&mut self) -> ([*mut core::ffi::c_void; MAX_PTX_PARAMS], usize) {
                let mut pointers = [core::ptr::null_mut(); MAX_PTX_PARAMS];
                let mut len = 0;
                $(
                    let (parts, count) = self.$index.parts();
                    pointers[len..len + count].copy_from_slice(&parts[..count]);
                    len += count;
                )+
                (pointers, len)
            }
        }
    };
}

tuple_params!(A: 0);
tuple_params!(A: 0, B: 1);
tuple_params!(A: 0, B: 1, C: 2);
tuple_params!(A: 0, B: 1, C: 2, D: 3);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9, K: 10);
tuple_params!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9, K: 10, L: 11);

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn pointers_point_at_each_field_in_order() {
        let mut args = (7u32, 2.5f32, core::ptr::null::<f32>(), 9u64);
        let (pointers, len) = args.pointers();
        assert_eq!(len, 4);
        // SAFETY: each pointer points at the field of that type.
        unsafe {
            assert_eq!(*pointers[0].cast::<u32>(), 7);
            assert_eq!(*pointers[1].cast::<f32>(), 2.5);
            assert!((*pointers[2].cast::<*const f32>()).is_null());
            assert_eq!(*pointers[3].cast::<u64>(), 9);
        }
    }

    #[test]
    fn a_view_is_two_parameters_its_pointer_then_its_length() {
        let data = [1.0f32, 2.0, 3.0];
        let mut args = (7u32, crate::device::GlobalSlice::new(&data), 9u64);
        let (pointers, len) = args.pointers();
        assert_eq!(len, 4);
        // SAFETY: each pointer points at the part of that type.
        unsafe {
            assert_eq!(*pointers[0].cast::<u32>(), 7);
            assert_eq!(*pointers[1].cast::<*const f32>(), data.as_ptr());
            assert_eq!(*pointers[2].cast::<usize>(), 3);
            assert_eq!(*pointers[3].cast::<u64>(), 9);
        }
        let mut values = [0u32; 12];
        let mut args = (crate::device::GlobalMatrixMut::new(&mut values, 3, 4),);
        let (pointers, len) = args.pointers();
        assert_eq!(len, 2);
        // SAFETY: as above.
        unsafe {
            assert_eq!(
                *pointers[1].cast::<crate::device::MatrixExtents>(),
                crate::device::MatrixExtents {
                    rows: 3,
                    cols: 4,
                    pitch: 4
                }
            );
        }
    }
}
