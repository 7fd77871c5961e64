//! The bf16 ladder's rung for A of up to 16 rows on the tensor cores:
//! [`crate::matmul::small_m_mma`] on `mma.sync` m16n8k16, A's rows as its 16, B streamed once.
//! Not `auto`'s pick: its 2-byte loads of B ran slower than the persistent rung at 8 and 16 rows
//! (docs/perf-log.md, change 140).

use super::MatmulBf16;
use crate::matmul::small_m_mma::{Bf16Mma, THREADS, grid, small_m_mma};
use ptxkit::device::mma::Bf16;
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks) on the tensor cores: bf16 operands, A's
    /// rows as `mma.sync` m16n8k16's 16, B streamed once.
    pub unsafe fn matmul_bf16_small_m16(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the block and grid.
        unsafe { small_m_mma::<Bf16Mma>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The tensor-core small-m rung.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_small_m16,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(0),
    grid: |p, device| grid((p.m, p.n, p.k), device),
};
