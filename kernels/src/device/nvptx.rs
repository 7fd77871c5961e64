//! The device layer on the GPU: PTX special registers, barriers and shuffles.

use super::word::SharedWord;
use crate::launch::Dim3;
use core::arch::asm;
use core::arch::nvptx::*;

#[inline(always)]
pub fn thread_idx() -> Dim3 {
    // SAFETY: reading special registers has no preconditions inside a kernel.
    unsafe { Dim3::new(_thread_idx_x(), _thread_idx_y(), _thread_idx_z()) }
}

#[inline(always)]
pub fn block_idx() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_block_idx_x(), _block_idx_y(), _block_idx_z()) }
}

#[inline(always)]
pub fn block_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_block_dim_x(), _block_dim_y(), _block_dim_z()) }
}

#[inline(always)]
pub fn grid_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_grid_dim_x(), _grid_dim_y(), _grid_dim_z()) }
}

#[inline(always)]
pub fn sync_threads() {
    // SAFETY: bar.sync 0; the kernel's contract is that every thread of the block reaches it.
    unsafe { _syncthreads() }
}

#[inline(always)]
pub fn sync_warp() {
    // SAFETY: all 32 lanes take part (full member mask), as in __syncwarp().
    unsafe { asm!("bar.warp.sync 0xffffffff;") }
}

#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %laneid;", out(reg32) lane, options(pure, nomem, nostack)) };
    lane
}

// The `c` operand packs the clamp: 0x1f for down/bfly/idx (lanes past 31 read their own value),
// 0 for up (lanes below 0 read their own value). Not `pure`: shuffles are convergent, so they must
// not be moved into or out of branches.
macro_rules! shuffle {
    ($name:ident, $mode:literal, $clamp:literal) => {
        #[inline(always)]
        pub fn $name(bits: u32, operand: u32) -> u32 {
            let out: u32;
            // SAFETY: full member mask; every lane of the warp executes the shuffle.
            unsafe {
                asm!(
                    concat!("shfl.sync.", $mode, ".b32 {}, {}, {}, ", $clamp, ", 0xffffffff;"),
                    out(reg32) out, in(reg32) bits, in(reg32) operand,
                )
            };
            out
        }
    };
}

shuffle!(shfl_xor, "bfly", "0x1f");
shuffle!(shfl_down, "down", "0x1f");
shuffle!(shfl_up, "up", "0x0");
shuffle!(shfl_idx, "idx", "0x1f");

#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

#[inline(always)]
pub fn clock64() -> u64 {
    let clock: u64;
    // SAFETY: reads a special register. Volatile (no `pure`): two reads must not be merged.
    unsafe { asm!("mov.u64 {}, %clock64;", out(reg64) clock, options(nomem, nostack)) };
    clock
}

#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    let bytes: u32;
    // SAFETY: reads a special register (PTX ISA 4.1+).
    unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) bytes, options(pure, nomem, nostack)) };
    bytes
}

/// Base alignment of dynamic shared memory: 16 bytes, enough for vector loads.
#[repr(C, align(16))]
struct Align16([u8; 16]);

#[inline(always)]
pub fn dynamic_shared_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Align16>().cast::<u8>()
}

#[inline(always)]
pub fn shared_overflow(_end: u64, _limit: u32) -> ! {
    trap()
}

/// Ends the kernel with an error the host sees at its next synchronisation (`trap`).
#[inline(always)]
pub fn trap() -> ! {
    core::intrinsics::abort()
}

#[inline(always)]
pub unsafe fn shared_load<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: the caller passes a pointer into this block's dynamic shared memory.
    unsafe { ptr.read() }
}

#[inline(always)]
pub unsafe fn shared_load_volatile<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: as in `shared_load`.
    unsafe { ptr.read_volatile() }
}

#[inline(always)]
pub unsafe fn global_store<T: Copy>(ptr: *mut T, value: T) {
    // SAFETY: the caller passes a pointer valid for the write.
    unsafe { ptr.write(value) }
}

#[inline(always)]
pub unsafe fn shared_store<T: SharedWord>(ptr: *mut T, value: T) {
    // SAFETY: as in `shared_load`.
    unsafe { ptr.write(value) }
}
