//! The register-blocked kernel with its slices double-buffered through `cp.async`: while the block
//! multiplies step s out of one pair of slices, the copies for step s + 1 travel into the other
//! pair, so that a step no longer waits for its own global loads.
//!
//! `cp.async` copies 16 contiguous bytes, so A's slice cannot be transposed on the way in: it is
//! stored as rows of 8 (padded to 12 floats, which keeps them 16-byte aligned), and a thread reads
//! its rows 4 floats along k at a time. To keep those reads free of bank conflicts a thread's 8 rows
//! are 16 apart (rows r, r + 16, …, r + 112 with r = t / 16): the two rows a warp reads at once then
//! sit 12 words apart, in different banks. The columns are as in [`super::register_2d`]: 8
//! consecutive ones per thread, read as two 16-byte words.
//!
//! The copies need k and n multiples of 4 and 16-byte aligned matrices; any other shape stages one
//! element at a time with plain loads and stores, through the same two buffers and barriers.

use super::Matmul;
use super::register_2d::{BK, BM, BN, Block, THREADS, TM, TN, add_outer_product, stage_b_scalar, tile_origin};
use ptxkit::device::{
    Float4, MatrixLayout, SharedMatrix, async_copy_commit, async_copy_wait, global_store, is_aligned4, store4,
    sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Floats per row of a staged A slice: 8 of k and 4 of padding (rows stay 16-byte aligned, and
/// rows 1 apart fall 12 banks apart).
const A_PITCH: u32 = BK + 4;
/// Rows between a thread's consecutive rows of C.
const ROW_STRIDE: u32 = BM / TM;

shared_memory! {
    /// Two pairs of slices: A's 128×8 (row-major, padded) and B's 8×128, for even and odd steps.
    pub struct Buffers {
        pub a0: SharedMatrix<f32> = MatrixLayout { rows: BM, cols: BK, pitch: A_PITCH },
        pub b0: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
        pub a1: SharedMatrix<f32> = MatrixLayout { rows: BM, cols: BK, pitch: A_PITCH },
        pub b1: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
    }
}

/// This thread's first row of C in the tile (its others follow every [`ROW_STRIDE`]) and first
/// column (its others are the next 7).
#[inline(always)]
fn origin() -> (u32, u32) {
    let t = thread_idx().x;
    (t / (BN / TN), t % (BN / TN) * TN)
}

/// Starts the step at `k0` into `(a_slice, b_slice)`: with `cp.async` (one 16-byte copy of each
/// slice per thread; zeros stored directly where a chunk lies outside A or B) on the vector path,
/// else with plain loads and stores one element at a time. Either way the thread then commits a
/// group (empty on the scalar path), so that every step has one.
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements (aligned, k and n multiples of 4, on the vector path); the
/// block has [`THREADS`] threads; no thread reads the two slices until the next barrier.
#[inline(always)]
unsafe fn stage(
    (a_slice, b_slice): (SharedMatrix<f32>, SharedMatrix<f32>),
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    k0: u32,
    vector: bool,
) {
    let t = thread_idx().x;
    let (tile_row, tile_col) = tile_origin();
    if vector {
        let (row, kk) = (t / (BK / 4), 4 * (t % (BK / 4)));
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        // SAFETY (both slices): row < BM, kk + 4 ≤ BK, and the rows 16-byte aligned (pitch 12); the
        // source float4 lies inside its matrix's row (k, n multiples of 4) and is aligned.
        unsafe {
            if global_row < m && global_k < k {
                a_slice.copy4_async_unchecked(row, kk, a.add((global_row * k + global_k) as usize));
            } else {
                a_slice.set4_unchecked(row, kk, Float4([0.0; 4]));
            }
        }
        let (kk, col) = (t / (BN / 4), 4 * (t % (BN / 4)));
        let (global_k, global_col) = (k0 + kk, tile_col + col);
        unsafe {
            if global_k < k && global_col < n {
                b_slice.copy4_async_unchecked(kk, col, b.add((global_k * n + global_col) as usize));
            } else {
                b_slice.set4_unchecked(kk, col, Float4([0.0; 4]));
            }
        }
    } else {
        unrolled::<{ BM * BK / THREADS }>(|r| {
            let i = t + THREADS * r;
            let (row, kk) = (i / BK, i % BK);
            let (global_row, global_k) = (tile_row + row, k0 + kk);
            // SAFETY: guarded by A's bounds; row < BM, kk < BK.
            let value = if global_row < m && global_k < k {
                unsafe { *a.add((global_row * k + global_k) as usize) }
            } else {
                0.0
            };
            unsafe { a_slice.set_unchecked(row, kk, value) };
        });
        // SAFETY: forwarded from the caller.
        unsafe { stage_b_scalar(b_slice, b, (n, k), k0) };
    }
    async_copy_commit();
}

/// `acc += A-slice rows · B-slice` for this thread's 8 rows and 8 columns, half of k at a time (so
/// that 32 values of A, not 64, are live beside the accumulators).
#[inline(always)]
fn multiply((a_slice, b_slice): (SharedMatrix<f32>, SharedMatrix<f32>), acc: &mut Block) {
    let (row0, col0) = origin();
    // Kept as a loop: unrolled, LLVM hoists both halves' loads and the registers run out.
    for half in 0..2 {
        // SAFETY (every read): row0 + 16i < BM, 4·half + 4 ≤ BK, kk < BK, col0 + 8 ≤ BN; all
        // 16-byte aligned (pitches 12 and 128, offsets multiples of 4).
        let rows: [Float4; TM as usize] =
            core::array::from_fn(|i| unsafe { a_slice.get4_unchecked(row0 + ROW_STRIDE * i as u32, 4 * half) });
        unrolled::<4>(|q| {
            let kk = 4 * half + q;
            let (low, high) = unsafe { (b_slice.get4_unchecked(kk, col0), b_slice.get4_unchecked(kk, col0 + 4)) };
            let column: [f32; TM as usize] = core::array::from_fn(|i| rows[i].0[q as usize]);
            let row: [f32; TN as usize] = core::array::from_fn(|j| if j < 4 { low.0[j] } else { high.0[j - 4] });
            add_outer_product(acc, &column, &row);
        });
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B`, a 128×128 tile per block, 8×8 outputs per thread, slices double-buffered.
    pub unsafe fn matmul_double_buffered(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let buffers = Buffers::carve();
        let pair = |step: u32| if step.is_multiple_of(2) { (buffers.a0, buffers.b0) } else { (buffers.a1, buffers.b1) };
        // The same for every thread of the launch: one path, one set of barriers.
        let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b) && is_aligned4(c);
        let steps = k.div_ceil(BK);
        let mut acc: Block = [[0.0; TN as usize]; TM as usize];
        // SAFETY (every stage): forwarded from the kernel's contract; KERNEL launches THREADS
        // threads; the pair being staged was last read before the previous step's final barrier.
        unsafe { stage(pair(0), (a, b), (m, n, k), 0, vector) };
        for step in 0..steps {
            if step + 1 < steps {
                unsafe { stage(pair(step + 1), (a, b), (m, n, k), (step + 1) * BK, vector) };
            } else {
                // An empty group, so that the wait below always leaves exactly the newest behind.
                async_copy_commit();
            }
            // This thread's copies for `step` have landed (only the group for step + 1 may be in
            // flight)...
            async_copy_wait::<1>();
            // ...and every thread's, before anyone reads them.
            sync_threads();
            multiply(pair(step), &mut acc);
            // Everyone has read this pair before step + 2 refills it.
            sync_threads();
        }
        let (tile_row, tile_col) = tile_origin();
        let (row0, col0) = origin();
        unrolled::<TM>(|i| {
            let global_row = tile_row + row0 + ROW_STRIDE * i;
            if vector {
                unrolled::<{ TN / 4 }>(|h| {
                    let global_col = tile_col + col0 + 4 * h;
                    if global_row < m && global_col < n {
                        let four = Float4(core::array::from_fn(|j| acc[i as usize][4 * h as usize + j]));
                        // SAFETY: inside C (n a multiple of 4: the float4 is wholly inside), aligned.
                        unsafe { store4(c.add((global_row * n + global_col) as usize), four) };
                    }
                });
            } else {
                unrolled::<TN>(|j| {
                    let global_col = tile_col + col0 + j;
                    if global_row < m && global_col < n {
                        // SAFETY: inside C.
                        unsafe { global_store(c.add((global_row * n + global_col) as usize), acc[i as usize][j as usize]) };
                    }
                });
            }
        });
    }
}

/// One block of 256 threads per 128×128 tile of C; 20 KiB of slices; two blocks per SM.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_double_buffered,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Buffers::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
