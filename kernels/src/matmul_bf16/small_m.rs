//! The bf16 ladder's small-m rung: [`crate::matmul::small_m`]'s single stream through B for A of
//! a few rows, eight bf16 columns per lane (256 per block), each product exact in f32. At such m
//! the product runs as fast as B is read, and the tensor cores' 128-row tiles would stay mostly
//! empty.

use super::MatmulBf16;
use crate::matmul::small_m::{Bf16s, THREADS, grid, shared_bytes, small_m};
use ptxkit::device::mma::Bf16;
use ptxkit::{Dim3, Kernel, KernelFn, Problem, SharedMemory, kernel};

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 3)]
    /// `C = A·B` for m = 1 (more rows in more blocks): bf16 operands, one row of A per block.
    pub unsafe fn matmul_bf16_small_m1(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: forwarded from the kernel's contract; KERNEL_M1 launches the block and grid.
        unsafe { small_m::<Bf16s, 1, 8>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 4 (more rows in more blocks): bf16 operands, four rows of A per block.
    pub unsafe fn matmul_bf16_small_m4(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: as above; KERNEL_M4 launches the block and grid.
        unsafe { small_m::<Bf16s, 4, 8>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` for m ≤ 8 (more rows in more blocks): bf16 operands, eight rows of A per block.
    pub unsafe fn matmul_bf16_small_m8(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: as above; KERNEL_M8 launches the block and grid.
        unsafe { small_m::<Bf16s, 8, 8>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The launch of a small-m rung with MR rows of A per block (256 columns per block).
const fn config<const MR: usize>(code: KernelFn<<MatmulBf16 as Problem>::Args>) -> Kernel<MatmulBf16> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(shared_bytes(MR, 8)),
        grid: |p, device| grid((p.m, p.n, p.k), MR as u32, 32 * 8, device),
    }
}

/// One row of A per block.
pub const KERNEL_M1: Kernel<MatmulBf16> = config::<1>(matmul_bf16_small_m1);
/// Four rows of A per block.
pub const KERNEL_M4: Kernel<MatmulBf16> = config::<4>(matmul_bf16_small_m4);
/// Eight rows of A per block.
pub const KERNEL_M8: Kernel<MatmulBf16> = config::<8>(matmul_bf16_small_m8);
/// The bf16 small-m rungs, in the order of [`crate::matmul::small_m::ROWS`].
pub const KERNELS: [Kernel<MatmulBf16>; 3] = [KERNEL_M1, KERNEL_M4, KERNEL_M8];

/// The most rows of A for which `auto` takes these rungs: from eight rows the CUDA cores' eight
/// multiply-adds per 2-byte element fall behind the tensor cores' rungs at wide B (docs/perf-log.md,
/// change 112).
pub const MAX_ROWS: u32 = 4;
