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

/// The four f32 at `ptr`, loaded past this SM's L1 (`ld.global.cg.v4.f32`: cached in the L2
/// only): for sums other SMs wrote during the launch and published (read after an acquire), where
/// a plain load would also fill the L1 with lines no one reads again.
///
/// # Safety
/// `ptr` is 16-byte aligned and four f32 of global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load4_l2(ptr: *const f32) -> Float4 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: the caller passes four aligned f32 of global memory.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; ld.global.cg.v4.f32 {{{x}, {y}, {z}, {w}}}, [a]; }}",
                p = in(reg64) ptr, x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                options(nostack, readonly),
            )
        };
        Float4([x, y, z, w])
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        super::emulated::check_aligned4(ptr, "load");
        // SAFETY: forwarded from the caller.
        unsafe { super::global_load(ptr.cast::<Float4>()) }
    }
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

/// Adds four f32 into the four at `ptr` as one reduction (`red.global.add.v4.f32`: sm_90 and PTX
/// ISA 8.1 on), a quarter of the requests of four scalar [`super::red_add`]s. Each element's add
/// is atomic on its own; the four are not one atomic unit.
///
/// # Safety
/// `ptr` is 16-byte aligned and four f32 of global memory, valid for reads and writes; on the GPU,
/// only in code built for sm_90 or later.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn red_add4(ptr: *mut f32, value: Float4) {
    #[cfg(target_arch = "nvptx64")]
    {
        let [x, y, z, w] = value.0;
        // SAFETY: the caller passes four aligned f32 of global memory.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; red.global.add.v4.f32 [a], {{{x}, {y}, {z}, {w}}}; }}",
                p = in(reg64) ptr, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, w = in(reg32) w,
                options(nostack),
            )
        };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        super::emulated::check_aligned4(ptr, "reduction");
        for (i, element) in value.0.into_iter().enumerate() {
            // SAFETY: inside the four the caller passes.
            unsafe { super::red_add(ptr.wrapping_add(i), element) };
        }
    }
}

/// Adds two f32 into the two at `ptr` as one reduction (`red.global.add.v2.f32`: sm_90 and PTX
/// ISA 8.1 on), as [`red_add4`] does four.
///
/// # Safety
/// `ptr` is 8-byte aligned and two f32 of global memory, valid for reads and writes; on the GPU,
/// only in code built for sm_90 or later.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn red_add2(ptr: *mut f32, (x, y): (f32, f32)) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: the caller passes two aligned f32 of global memory.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; red.global.add.v2.f32 [a], {{{x}, {y}}}; }}",
                p = in(reg64) ptr, x = in(reg32) x, y = in(reg32) y,
                options(nostack),
            )
        };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(
            (ptr as usize).is_multiple_of(8),
            "red_add2: {ptr:p} is not 8-byte aligned"
        );
        // SAFETY: inside the two the caller passes.
        unsafe {
            super::red_add(ptr, x);
            super::red_add(ptr.wrapping_add(1), y);
        }
    }
}
