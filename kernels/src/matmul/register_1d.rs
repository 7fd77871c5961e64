//! 1D register blocking: each block computes a 64×64 tile of C with 512 threads, each thread a
//! column of 8 outputs in registers. For each step of 8 along k the block stages a 64×8 slice of A
//! and an 8×64 slice of B in shared memory; a thread reads its 8 values of B's column once and each
//! of its 8 rows of A's slice as two 16-byte loads (the whole warp reads the same rows: broadcasts),
//! then does 64 fused multiply-adds: 24 shared loads per 64 FMA, where the tiled kernel does 128.
//! Elements outside A or B are staged as zeros: any m, n, k.

use super::Matmul;
use ptxkit::device::{MatrixLayout, SharedMatrix, block_idx, fma, global_store, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 64;
/// Columns of C per block.
pub const BN: u32 = 64;
/// Steps along k per staged slice.
pub const BK: u32 = 8;
/// Rows of C per thread (one column of them).
pub const TM: u32 = 8;
/// Threads per block: one per column of TM outputs in the tile.
pub const THREADS: u32 = BM / TM * BN;

const _: () = assert!(
    BM * BK == THREADS && BK * BN == THREADS,
    "one element of each slice per thread"
);

shared_memory! {
    /// A's 64×8 slice (rows of 8: two 16-byte words each) and B's 8×64 slice.
    pub struct Slices {
        pub a: SharedMatrix<f32> = MatrixLayout::dense(BM, BK),
        pub b: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
    }
}

kernel! {
    /// `C = A·B`, a 64×64 tile per block, a column of 8 outputs per thread.
    pub unsafe fn matmul_register_1d(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let Slices { a: a_slice, b: b_slice } = Slices::carve();
        let t = thread_idx().x;
        let (tile_row, tile_col) = (block_idx().y * BM, block_idx().x * BN);
        // This thread's outputs: rows row0..row0 + 8 of column col of the tile.
        let (row0, col) = (t / BN * TM, t % BN);
        let mut acc = [0.0f32; TM as usize];
        for step in 0..k.div_ceil(BK) {
            let k0 = step * BK;
            // One element of each slice per thread, consecutive threads along the rows.
            let (a_row, a_k) = (t / BK, t % BK);
            let (global_row, global_k) = (tile_row + a_row, k0 + a_k);
            // SAFETY (both loads): guarded by A's (m×k) and B's (k×n) bounds.
            let value = if global_row < m && global_k < k {
                unsafe { *a.add((global_row * k + global_k) as usize) }
            } else {
                0.0
            };
            // SAFETY: a_row < BM, a_k < BK.
            unsafe { a_slice.set_unchecked(a_row, a_k, value) };
            let (b_k, b_col) = (t / BN, t % BN);
            let (global_k, global_col) = (k0 + b_k, tile_col + b_col);
            let value = if global_k < k && global_col < n {
                unsafe { *b.add((global_k * n + global_col) as usize) }
            } else {
                0.0
            };
            // SAFETY: b_k < BK, b_col < BN.
            unsafe { b_slice.set_unchecked(b_k, b_col, value) };
            // The slices are complete before anyone reads them...
            sync_threads();
            // SAFETY (every read): kk < BK, col < BN, row0 + i < BM; A's rows are 8 floats (32
            // bytes) from a 16-byte aligned start, so both halves are aligned float4.
            let column: [f32; BK as usize] = core::array::from_fn(|kk| unsafe { b_slice.get_unchecked(kk as u32, col) });
            unrolled::<TM>(|i| {
                let (low, high) = unsafe { (a_slice.get4_unchecked(row0 + i, 0), a_slice.get4_unchecked(row0 + i, 4)) };
                unrolled::<BK>(|kk| {
                    let a_value = if kk < 4 { low.0[kk as usize] } else { high.0[kk as usize - 4] };
                    acc[i as usize] = fma(a_value, column[kk as usize], acc[i as usize]);
                });
            });
            // ...and everyone has read them before the next step overwrites them.
            sync_threads();
        }
        let global_col = tile_col + col;
        unrolled::<TM>(|i| {
            let global_row = tile_row + row0 + i;
            if global_row < m && global_col < n {
                // SAFETY: inside C (m×n).
                unsafe { global_store(c.add((global_row * n + global_col) as usize), acc[i as usize]) };
            }
        });
    }
}

/// One block of 512 threads per 64×64 tile of C.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_register_1d,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Slices::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
