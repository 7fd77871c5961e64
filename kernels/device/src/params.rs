//! A kernel's parameter list as one typed value: a tuple of pointers, scalars and `#[repr(C)]`
//! structs in the order of the PTX entry's parameters, as cudarc's examples pass them. One generic
//! launch then serves every kernel with that signature, on the GPU (each field's bytes become one
//! `.param`) and on the emulator (the tuple is the kernel function's arguments).

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
/// # Safety
/// The value's bytes on the host are what the kernel reads as that parameter on nvptx64: the type
/// is a primitive, a raw pointer, or `#[repr(C)]` with only such fields (C's layout is the same on
/// the host and on nvptx64, both 64-bit and little-endian), and pointers in it are valid where the
/// kernel runs (device or managed memory on the GPU).
pub unsafe trait Param: Copy {
    /// The global memory the parameter views, for the emulator's checks: the typed views of
    /// [`device::global`](crate::device::GlobalSlice) say; anything else views none.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    fn global_region(&self) -> Option<GlobalRegion> {
        None
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

/// Most parameters a kernel takes.
pub const MAX_PARAMS: usize = 12;

/// A kernel's parameters: a tuple of [`Param`]s.
///
/// # Safety
/// `pointers` returns one pointer per field, in order, each to that field's bytes: `cuLaunchKernel`
/// reads each parameter's bytes through them.
pub unsafe trait Params: Copy {
    /// Pointers to the fields, in order, as `cuLaunchKernel` takes them; the first `len` are valid.
    #[cfg(not(target_arch = "nvptx64"))]
    fn pointers(&mut self) -> ([*mut core::ffi::c_void; MAX_PARAMS], usize);
}

macro_rules! tuple_params {
    ($($name:ident : $index:tt),+) => {
        // SAFETY: one pointer per field, in order, each to the field itself.
        unsafe impl<$($name: Param),+> Params for ($($name,)+) {
            #[cfg(not(target_arch = "nvptx64"))]
            fn pointers(&mut self) -> ([*mut core::ffi::c_void; MAX_PARAMS], usize) {
                let mut pointers = [core::ptr::null_mut(); MAX_PARAMS];
                let mut len = 0;
                $(
                    pointers[len] = (&mut self.$index as *mut $name).cast();
                    len += 1;
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
}
