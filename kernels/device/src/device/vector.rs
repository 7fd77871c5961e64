//! `Float4`: four f32 moved as one 16-byte access (`ld.global.v4.f32`, `LDG.E.128`), the first step
//! of a memory-bound kernel toward the copy ceiling: a quarter of the instructions and four times
//! the bytes in flight per load.

/// Four consecutive f32, 16-byte aligned as CUDA's `float4`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
pub struct Float4(pub [f32; 4]);

/// Whether `ptr` is 16-byte aligned, as [`load4`] and [`store4`] need.
#[inline(always)]
pub fn is_aligned4<T>(ptr: *const T) -> bool {
    (ptr as usize).is_multiple_of(core::mem::align_of::<Float4>())
}

/// The four f32 at `ptr`.
///
/// # Safety
/// `ptr` is 16-byte aligned and valid for reads of four f32.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load4(ptr: *const f32) -> Float4 {
    #[cfg(not(target_arch = "nvptx64"))]
    super::emulated::check_aligned4(ptr, "load");
    // SAFETY: forwarded from the caller.
    unsafe { ptr.cast::<Float4>().read() }
}

/// Stores four f32 at `ptr`, as one global store (recorded by the emulator's race check).
///
/// # Safety
/// `ptr` is 16-byte aligned and valid for writes of four f32.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store4(ptr: *mut f32, value: Float4) {
    #[cfg(not(target_arch = "nvptx64"))]
    super::emulated::check_aligned4(ptr, "store");
    // SAFETY: forwarded from the caller.
    unsafe { super::global_store(ptr.cast::<Float4>(), value) }
}
