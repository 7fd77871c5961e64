//! Rung 1: `mma.sync` m16n8k8 on TF32. A block of four warps computes a 64×64 tile of C, each
//! warp a 32×32 quarter as 2×4 tensor-core tiles of 16×8 (32 f32 accumulators per lane). Per step
//! of 8 along k the block stages 64×8 of A and 8×64 of B in shared memory (zeros outside the
//! matrices, so edge tiles need no other case), and each lane reads its fragments from there by the
//! tables of [`ptxkit::device::mma`]. The pitches make those reads conflict-free: A's rows 12 floats
//! apart put the 8 groups × 4 members of a fragment read on 32 different banks, B's rows 72 apart
//! the same. Plain loads and one stage: what it lacks against cuBLAS (ldmatrix, cp.async stages,
//! larger tiles) is the next rungs' business.

use super::{MatmulTc, TensorMaps};
use ptxkit::device::mma::{accumulator_position, mma_tf32_m16n8k8, tf32_a_position, tf32_b_position};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, block_idx, global_store, lane_id, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 64;
/// Columns of C per block.
pub const BN: u32 = 64;
/// The k of one tensor-core step.
pub const BK: u32 = 8;
/// Four warps, 2×2 over the block's tile.
pub const THREADS: u32 = 4 * WARP_SIZE;
/// Tensor-core tiles per warp: 2 down (16 rows each), 4 across (8 columns each).
const MI: u32 = 2;
const NI: u32 = 4;
/// Elements of each staged tile per thread.
const STAGED: u32 = BM * BK / THREADS;

/// A's 64×8 slice, rows 12 floats apart.
const A_LAYOUT: MatrixLayout = MatrixLayout {
    rows: BM,
    cols: BK,
    pitch: BK + 4,
};
/// B's 8×64 slice, rows 72 floats apart.
const B_LAYOUT: MatrixLayout = MatrixLayout {
    rows: BK,
    cols: BN,
    pitch: BN + 8,
};

shared_memory! {
    /// One step's slices of A and B.
    pub struct Slices {
        pub a: SharedMatrix<f32> = A_LAYOUT,
        pub b: SharedMatrix<f32> = B_LAYOUT,
    }
}

kernel! {
    /// `C = A·B` on the tensor cores (TF32 operands, f32 accumulation), 64×64 per block.
    pub unsafe fn matmul_tc_tf32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32) {
        // The small-m rung's counters: unused here.
        let _ = arrivals;
        // Tensor maps are for the TMA rung.
        let _ = maps;
        let Slices { a: a_tile, b: b_tile } = Slices::carve();
        let (tid, lane) = (thread_idx().x, lane_id());
        let warp = tid / WARP_SIZE;
        let (row0, col0) = (block_idx().y * BM, block_idx().x * BN);
        // This warp's quarter of the block's tile.
        let (warp_row, warp_col) = ((warp / 2) * (BM / 2), (warp % 2) * (BN / 2));
        let mut acc = [[[0.0f32; 4]; NI as usize]; MI as usize];
        for step in 0..k.div_ceil(BK) {
            unrolled::<STAGED>(|i| {
                let e = tid + i * THREADS;
                let (r, col) = (e / BK, e % BK);
                let (row, at) = (row0 + r, step * BK + col);
                // SAFETY: the read is inside A (m×k); r < BM and col < BK, inside the slice.
                let value = if row < m && at < k { unsafe { *a.add((row * k + at) as usize) } } else { 0.0 };
                unsafe { a_tile.set_unchecked(r, col, value) };
                let (r, col) = (e / BN, e % BN);
                let (at, column) = (step * BK + r, col0 + col);
                // SAFETY: inside B (k×n), and r < BK, col < BN.
                let value = if at < k && column < n { unsafe { *b.add((at * n + column) as usize) } } else { 0.0 };
                unsafe { b_tile.set_unchecked(r, col, value) };
            });
            // The slices are whole before any fragment is read...
            sync_threads();
            // SAFETY (fragment reads): rows below BM and BK, columns below BK and BN.
            let fa: [[u32; 4]; MI as usize] = core::array::from_fn(|mi| {
                core::array::from_fn(|r| {
                    let (row, col) = tf32_a_position(lane, r as u32);
                    unsafe { a_tile.get_unchecked(warp_row + 16 * mi as u32 + row, col) }.to_bits()
                })
            });
            let fb: [[u32; 2]; NI as usize] = core::array::from_fn(|ni| {
                core::array::from_fn(|r| {
                    let (at, col) = tf32_b_position(lane, r as u32);
                    unsafe { b_tile.get_unchecked(at, warp_col + 8 * ni as u32 + col) }.to_bits()
                })
            });
            unrolled::<MI>(|mi| {
                unrolled::<NI>(|ni| {
                    let (mi, ni) = (mi as usize, ni as usize);
                    acc[mi][ni] = mma_tf32_m16n8k8(fa[mi], fb[ni], acc[mi][ni]);
                });
            });
            // ...and every warp has read them before the next step overwrites them.
            sync_threads();
        }
        unrolled::<MI>(|mi| {
            unrolled::<NI>(|ni| {
                unrolled::<4>(|r| {
                    let (row, col) = accumulator_position(lane, r);
                    let (row, col) = (row0 + warp_row + 16 * mi + row, col0 + warp_col + 8 * ni + col);
                    if row < m && col < n {
                        // SAFETY: inside C (m×n).
                        unsafe { global_store(c.add((row * n + col) as usize), acc[mi as usize][ni as usize][r as usize]) };
                    }
                });
            });
        });
    }
}

/// [`THREADS`] threads per block, one block per 64×64 tile of C.
pub const KERNEL: Kernel<MatmulTc> = Kernel {
    code: matmul_tc_tf32,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Slices::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
