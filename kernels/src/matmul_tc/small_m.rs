//! The TF32 ladder's small-m rung: [`crate::matmul::small_m`]'s single stream through B for A of
//! a few rows, each operand cut to TF32 as the tensor cores read it (so the ladder's check, the
//! product of the operands as read, holds it to the same bound). At such m the product runs as
//! fast as B is read, and the tensor cores' 64- or 128-row tiles would stay mostly empty.

use super::MatmulTc;
use crate::matmul::small_m::{THREADS, Tf32, grid, shared_bytes, small_m};
use ptxkit::{Dim3, Kernel, KernelFn, Problem, SharedMemory, kernel};

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 4)]
    /// `C = A·B` for m = 1 (more rows in more blocks): TF32 operands, one row of A per block.
    pub unsafe fn matmul_tc_small_m1(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: forwarded from the kernel's contract; KERNEL_M1 launches the block and grid.
        unsafe { small_m::<Tf32, 1, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 4 (more rows in more blocks): TF32 operands, four rows of A per block.
    pub unsafe fn matmul_tc_small_m4(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: as above; KERNEL_M4 launches the block and grid.
        unsafe { small_m::<Tf32, 4, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` for m ≤ 8 (more rows in more blocks): TF32 operands, eight rows of A per block.
    pub unsafe fn matmul_tc_small_m8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: as above; KERNEL_M8 launches the block and grid.
        unsafe { small_m::<Tf32, 8, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The launch of a small-m rung with MR rows of A per block (128 columns per block).
const fn config<const MR: usize>(code: KernelFn<<MatmulTc as Problem>::Args>) -> Kernel<MatmulTc> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(shared_bytes(MR, 4)),
        grid: |p, device| grid((p.m, p.n, p.k), MR as u32, 32 * 4, device),
    }
}

/// One row of A per block.
pub const KERNEL_M1: Kernel<MatmulTc> = config::<1>(matmul_tc_small_m1);
/// Four rows of A per block.
pub const KERNEL_M4: Kernel<MatmulTc> = config::<4>(matmul_tc_small_m4);
/// Eight rows of A per block.
pub const KERNEL_M8: Kernel<MatmulTc> = config::<8>(matmul_tc_small_m8);
/// The TF32 small-m rungs, in the order of [`crate::matmul::small_m::ROWS`].
pub const KERNELS: [Kernel<MatmulTc>; 3] = [KERNEL_M1, KERNEL_M4, KERNEL_M8];

/// The most rows of A for which `auto` takes these rungs: at 16 rows and a wide B (28672 columns)
/// the `wgmma` rung ran ahead (docs/perf-log.md, change 112).
pub const MAX_ROWS: u32 = 8;
