//! The TF32 ladder's rung for A of up to 16 rows on the tensor cores:
//! [`crate::matmul::small_m_mma`] on `mma.sync` m16n8k8, A's rows as its 16, B streamed once.

use super::MatmulTc;
use crate::matmul::small_m_mma::{THREADS, Tf32Mma, grid, small_m_mma};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks) on the tensor cores: TF32 operands, A's
    /// rows as `mma.sync` m16n8k8's 16, B streamed once.
    pub unsafe fn matmul_tc_small_m16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the block and grid.
        unsafe { small_m_mma::<Tf32Mma>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The tensor-core small-m rung.
pub const KERNEL: Kernel<MatmulTc> = Kernel {
    code: matmul_tc_small_m16,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(0),
    grid: |p, device| grid((p.m, p.n, p.k), device),
};
