//! 2D register blocking: each block computes a 128×128 tile of C with 256 threads, each thread an
//! 8×8 block of outputs held in 64 registers. For each step of 8 along k the block stages a 128×8
//! slice of A and an 8×128 slice of B in shared memory; then, for each of the 8, a thread reads a
//! column of 8 from A and a row of 8 from B into registers and adds their outer product: 16
//! shared-memory loads for 64 fused multiply-adds, where the tiled kernel does 2 for 1.
//!
//! A's slice is stored transposed (k-major), so that a thread's column of 8 is 8 consecutive words;
//! its rows are padded by 4 words, so that the transposing store (lanes 8 apart along k) hits 32
//! different banks. Elements outside A or B are staged as zeros: any m, n, k.

use super::Matmul;
use ptxkit::device::{MatrixLayout, SharedMatrix, block_idx, fma, global_store, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 128;
/// Columns of C per block.
pub const BN: u32 = 128;
/// Steps along k per staged slice.
pub const BK: u32 = 8;
/// Rows of C per thread.
pub const TM: u32 = 8;
/// Columns of C per thread.
pub const TN: u32 = 8;
/// Threads per block: one per TM×TN block of the tile.
pub const THREADS: u32 = (BM / TM) * (BN / TN);
/// Words of padding per row of the transposed A slice (4 keeps its rows 16-byte aligned). An XOR
/// swizzle of its 16-byte chunks (chunk c of row kk at c ^ kk) is conflict-free too, but its
/// address arithmetic made `matmul_vectorized` slower on the 16-byte path (measured:
/// docs/perf-log.md, "padding or a swizzle for the transposed A slice").
const A_PAD: u32 = 4;

shared_memory! {
    /// A's 128×8 slice transposed (row kk holds A[·][kk], padded), and B's 8×128 slice.
    pub struct Slices {
        pub a: SharedMatrix<f32> = MatrixLayout { rows: BK, cols: BM, pitch: BM + A_PAD },
        pub b: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
    }
}

/// A thread's 8×8 block of outputs.
pub(super) type Block = [[f32; TN as usize]; TM as usize];

/// Where the calling thread's block starts in its block's tile: (row, column).
#[inline(always)]
pub(super) fn block_origin() -> (u32, u32) {
    let t = thread_idx().x;
    (t / (BN / TN) * TM, t % (BN / TN) * TN)
}

/// The tile of C this block computes starts at (row, column).
#[inline(always)]
pub(super) fn tile_origin() -> (u32, u32) {
    (block_idx().y * BM, block_idx().x * BN)
}

/// Stages A[tile rows][k0..k0 + 8] (transposed) and B[k0..k0 + 8][tile columns] one element per
/// access, zeros outside the matrices: each thread 4 elements of each, consecutive threads on
/// consecutive elements along A's rows (k) and B's rows (n), so that the global loads coalesce.
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements; the block has [`THREADS`] threads; the slices are
/// [`Slices`]' and not being read.
#[inline(always)]
pub(super) unsafe fn stage_scalar(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    k0: u32,
) {
    let t = thread_idx().x;
    let tile_row = tile_origin().0;
    unrolled::<{ BM * BK / THREADS }>(|r| {
        let i = t + THREADS * r;
        let (row, kk) = (i / BK, i % BK);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        // SAFETY: guarded by A's bounds (m×k).
        let value = if global_row < m && global_k < k {
            unsafe { *a.add((global_row * k + global_k) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, row < BM: inside the slice.
        unsafe { a_slice.set_unchecked(kk, row, value) };
    });
    // SAFETY: forwarded.
    unsafe { stage_b_scalar(b_slice, b, (n, k), k0) };
}

/// Stages B[k0..k0 + 8][tile columns] into `b_slice` one element per access, zeros outside B: each
/// thread 4 elements, consecutive threads along B's rows.
///
/// # Safety
/// `b` holds k·n elements; the block has [`THREADS`] threads; `b_slice` is 8×128 and not being read.
#[inline(always)]
pub(super) unsafe fn stage_b_scalar(b_slice: SharedMatrix<f32>, b: *const f32, (n, k): (u32, u32), k0: u32) {
    let t = thread_idx().x;
    let tile_col = tile_origin().1;
    unrolled::<{ BK * BN / THREADS }>(|r| {
        let i = t + THREADS * r;
        let (kk, col) = (i / BN, i % BN);
        let (global_k, global_col) = (k0 + kk, tile_col + col);
        // SAFETY: guarded by B's bounds (k×n).
        let value = if global_k < k && global_col < n {
            unsafe { *b.add((global_k * n + global_col) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, col < BN: inside the slice.
        unsafe { b_slice.set_unchecked(kk, col, value) };
    });
}

/// `acc += column ⊗ row`: the outer product of a column of A and a row of B, as fused
/// multiply-adds in a fixed order.
#[inline(always)]
pub(super) fn add_outer_product(acc: &mut Block, column: &[f32; TM as usize], row: &[f32; TN as usize]) {
    unrolled::<TM>(|i| {
        unrolled::<TN>(|j| {
            acc[i as usize][j as usize] = fma(column[i as usize], row[j as usize], acc[i as usize][j as usize])
        })
    });
}

/// Writes the thread's block to C one element at a time, inside C only.
///
/// # Safety
/// `c` holds m·n elements.
#[inline(always)]
pub(super) unsafe fn write_scalar(c: *mut f32, acc: &Block, (m, n): (u32, u32)) {
    let (tile_row, tile_col) = tile_origin();
    let (row0, col0) = block_origin();
    unrolled::<TM>(|i| {
        let global_row = tile_row + row0 + i;
        unrolled::<TN>(|j| {
            let global_col = tile_col + col0 + j;
            if global_row < m && global_col < n {
                // SAFETY: inside C (m×n).
                unsafe {
                    global_store(
                        c.add((global_row * n + global_col) as usize),
                        acc[i as usize][j as usize],
                    )
                };
            }
        });
    });
}

kernel! {
    /// `C = A·B`, a 128×128 tile per block, an 8×8 block per thread.
    pub unsafe fn matmul_register_2d(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let slices = Slices::carve();
        let (row0, col0) = block_origin();
        let mut acc: Block = [[0.0; TN as usize]; TM as usize];
        for step in 0..k.div_ceil(BK) {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads; the
            // slices are free (the barrier at the end of the previous step).
            unsafe { stage_scalar(slices, (a, b), (m, n, k), step * BK) };
            // The slices are complete before anyone reads them...
            sync_threads();
            unrolled::<BK>(|kk| {
                // SAFETY (both reads): kk < BK, row0 + i < BM, col0 + j < BN.
                let column = core::array::from_fn(|i| unsafe { slices.a.get_unchecked(kk, row0 + i as u32) });
                let row = core::array::from_fn(|j| unsafe { slices.b.get_unchecked(kk, col0 + j as u32) });
                add_outer_product(&mut acc, &column, &row);
            });
            // ...and everyone has read them before the next step overwrites them.
            sync_threads();
        }
        // SAFETY: C holds m·n elements.
        unsafe { write_scalar(c, &acc, (m, n)) };
    }
}

/// One block of 256 threads per 128×128 tile of C.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_register_2d,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Slices::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
