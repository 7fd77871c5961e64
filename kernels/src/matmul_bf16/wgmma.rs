//! Rung 2: Hopper's `wgmma`, the operands read by the tensor cores straight from shared memory. A
//! block of two warpgroups (eight warps) computes a 128×128 tile of C, each warpgroup a 64×128
//! half with `wgmma.m64n128k16` (64 accumulators per lane). Per step of 64 along k the block stages
//! A's 128×64 and B's 64×128 by 16-byte `cp.async` into a three-slot ring laid out in the 128-byte
//! swizzle that the descriptors name (see [`ptxkit::device::wgmma`]): A K-major, B MN-major in two
//! 64-column atoms, so neither is transposed on the way. Four `wgmma`s per step and warpgroup, then
//! a wait for them before the barrier that lets their slot be refilled.
//!
//! GPU-only (sm_90a): the emulator does not model `wgmma`. As in rung 1, shapes whose rows are not
//! 16-byte multiples stage with plain loads and stores into the same layout.

use super::MatmulBf16;
use super::swizzled::ROW_BYTES;
use ptxkit::device::{MatrixLayout, SharedMatrix, WARP_SIZE};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel_sm90a, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 128;
/// Columns of C per block.
pub const BN: u32 = 128;
/// The k of one step: one 128-byte swizzled row of bf16.
pub const BK: u32 = 64;
/// Slots of the ring.
pub const STAGES: u32 = 3;
/// Two warpgroups of four warps.
pub const THREADS: u32 = 8 * WARP_SIZE;
/// Rows of one slot: A's 128, then B's two atoms of 64 k-rows.
const SLOT_ROWS: u32 = BM + 2 * BK;
/// Rows kept free to align the ring to 1024 bytes (the swizzle's atom) wherever the carve lands.
const SLACK_ROWS: u32 = 1024 / ROW_BYTES;

shared_memory! {
    /// The ring of A's and B's slices, in 128-byte rows of 32 words.
    pub struct Ring {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(STAGES * SLOT_ROWS + SLACK_ROWS, ROW_BYTES / 4),
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::*;
    use crate::matmul_bf16::store::store_warpgroup;
    use crate::matmul_bf16::swizzled::{Operands, stage};
    use ptxkit::device::mma::Bf16;
    use ptxkit::device::wgmma::{
        Descriptor, fence_proxy_async, shared_address, wgmma_commit, wgmma_fence, wgmma_m64n128k16_bf16, wgmma_wait,
    };
    use ptxkit::device::{async_copy_commit, async_copy_wait, block_idx, sync_threads, thread_idx, unrolled};

    /// The kernel's body (see the module).
    ///
    /// # Safety
    /// The kernel's contract.
    #[inline(always)]
    pub unsafe fn run(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32) {
        let Ring { rows: ring } = Ring::carve();
        let tid = thread_idx().x;
        let warp = tid / WARP_SIZE;
        let group = warp / 4;
        let (row0, col0) = (block_idx().y * BM, block_idx().x * BN);
        let base = shared_address(ring.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let ops = Operands::new(a, b, (m, n, k), (row0, col0));
        let first_row = |slot: u32| skew + slot * SLOT_ROWS;
        let steps = k.div_ceil(BK);
        for step in 0..STAGES - 1 {
            if step < steps {
                unsafe { stage::<THREADS, BM, BN, BK>(&ring, ops, tid, step, first_row(step)) };
            }
            async_copy_commit();
        }
        let mut acc = [0.0f32; 64];
        for step in 0..steps {
            async_copy_wait::<{ STAGES - 2 }>();
            // This thread's copies and stores, seen by the tensor cores' reads...
            fence_proxy_async();
            // ...and everyone's: the step's slot is whole, the slot refilled next is free (its
            // wgmmas were waited for before this barrier).
            sync_threads();
            let next = step + STAGES - 1;
            if next < steps {
                unsafe { stage::<THREADS, BM, BN, BK>(&ring, ops, tid, next, first_row(next % STAGES)) };
            }
            async_copy_commit();
            let first = base + first_row(step % STAGES) * ROW_BYTES;
            let (a_rows, b_rows) = (first + 64 * group * ROW_BYTES, first + BM * ROW_BYTES);
            wgmma_fence();
            unrolled::<{ BK / 16 }>(
                #[inline(always)]
                |kk| {
                    // A: 16 more k = 32 bytes along the swizzled rows; 8-row atoms 1024 bytes apart.
                    let da = Descriptor::swizzle_128(a_rows + 32 * kk, 16, 1024);
                    // B: 16 more k = 16 rows; 64-column atoms BK rows apart, 8-row atoms 1024 bytes.
                    let db = Descriptor::swizzle_128(b_rows + 16 * ROW_BYTES * kk, BK * ROW_BYTES, 1024);
                    wgmma_m64n128k16_bf16(&mut acc, da, db);
                },
            );
            wgmma_commit();
            wgmma_wait::<0>();
        }
        // SAFETY: the kernel's contract (C holds m·n); every lane of the warpgroup is here.
        unsafe { store_warpgroup::<BN, _>(c, (m, n), (row0 + 64 * group, col0), |i| acc[i as usize]) };
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` by `wgmma` (bf16 operands, f32 sums and output), 128×128 per block.
    pub unsafe fn matmul_bf16_wgmma(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // The small-m rung's counters: unused here.
        let _ = arrivals;
        // Copies by cp.async: no tensor maps.
        let _ = maps;
        // SAFETY: the kernel's contract.
        unsafe { body::run(a, b, c, m, n, k) }
    }
}

/// [`THREADS`] threads per block, one block per 128×128 tile of C; a 97 KiB ring, two blocks per
/// SM.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_wgmma,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Ring::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
