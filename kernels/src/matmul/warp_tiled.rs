//! Warp tiling with register-prefetched double buffering: the 128×128 tile is split among the
//! eight warps as 64×32 warp tiles, and a lane's 8×8 outputs are four 4×4 blocks spread over its
//! warp's tile (rows 32 apart, columns 16 apart). For each k the lanes of a warp then read only 8
//! distinct 16-byte words of A's slice and 4 of B's, each contiguous: no bank conflict, where the
//! 8×8-contiguous layout of [`super::vectorized`] met two lanes per bank on B. Meanwhile the next
//! step's float4s of A and B travel from global memory into registers, and go to the other pair of
//! slices after the multiply: one barrier per step, and the loads overlap the arithmetic.
//!
//! As in [`super::vectorized`], the 16-byte path needs k and n multiples of 4 and aligned
//! matrices; other shapes stage one element at a time (without the overlap).

use super::Matmul;
use super::register_2d::{BK, BM, BN, Block, Slices, THREADS, TM, TN, add_outer_product, stage_scalar, tile_origin};
use crate::device::{
    Float4, MatrixLayout, SharedMatrix, WARP_SIZE, global_store, is_aligned4, lane_id, load4, store4, sync_threads,
    thread_idx, unrolled,
};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

/// Rows of a warp's tile.
pub const WM: u32 = 64;
/// Columns of a warp's tile.
pub const WN: u32 = 32;
/// Lanes along a warp tile's rows and columns (8 × 4 = 32).
const LANE_ROWS: u32 = 8;
const LANE_COLS: u32 = WARP_SIZE / LANE_ROWS;

const _: () = assert!((BM / WM) * (BN / WN) * WARP_SIZE == THREADS, "one warp per warp tile");
const _: () = assert!(
    WM == 2 * LANE_ROWS * 4 && WN == 2 * LANE_COLS * 4,
    "2×2 blocks of 4×4 per lane"
);

shared_memory! {
    /// Two pairs of [`Slices`]: A's 128×8 transposed (padded), B's 8×128.
    pub struct Buffers {
        pub a0: SharedMatrix<f32> = MatrixLayout { rows: BK, cols: BM, pitch: BM + 4 },
        pub b0: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
        pub a1: SharedMatrix<f32> = MatrixLayout { rows: BK, cols: BM, pitch: BM + 4 },
        pub b1: SharedMatrix<f32> = MatrixLayout::dense(BK, BN),
    }
}

/// This lane's first row and column in the block's tile; its rows are `row + 32·i + r` and its
/// columns `col + 16·j + c` for i, j < 2 and r, c < 4.
#[inline(always)]
fn origin() -> (u32, u32) {
    let warp = thread_idx().x / WARP_SIZE;
    let lane = lane_id();
    let (warp_row, warp_col) = (warp / (BN / WN) * WM, warp % (BN / WN) * WN);
    (warp_row + lane / LANE_COLS * 4, warp_col + lane % LANE_COLS * 4)
}

/// The step at `k0`'s float4 of A (row t / 2, k columns 4·(t % 2)..) and of B (row t / 32, columns
/// 4·(t % 32)..), zeros outside: what [`store_prefetched`] puts into a pair of slices.
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements, 16-byte aligned, k and n multiples of 4.
#[inline(always)]
unsafe fn prefetch((a, b): (*const f32, *const f32), (m, n, k): (u32, u32, u32), k0: u32) -> (Float4, Float4) {
    let t = thread_idx().x;
    let (tile_row, tile_col) = tile_origin();
    let (row, kk) = (t / (BK / 4), 4 * (t % (BK / 4)));
    let (global_row, global_k) = (tile_row + row, k0 + kk);
    // SAFETY (both): inside the matrix; a float4 along a row lies wholly inside it (k, n multiples
    // of 4), aligned.
    let a_four = if global_row < m && global_k < k {
        unsafe { load4(a.add((global_row * k + global_k) as usize)) }
    } else {
        Float4([0.0; 4])
    };
    let (kb, col) = (t / (BN / 4), 4 * (t % (BN / 4)));
    let (global_kb, global_col) = (k0 + kb, tile_col + col);
    let b_four = if global_kb < k && global_col < n {
        unsafe { load4(b.add((global_kb * n + global_col) as usize)) }
    } else {
        Float4([0.0; 4])
    };
    (a_four, b_four)
}

/// Stores what [`prefetch`] loaded: A's float4 transposed (four scalar stores; 32 banks per warp
/// with the padded pitch), B's whole.
#[inline(always)]
fn store_prefetched(Slices { a: a_slice, b: b_slice }: Slices, (a_four, b_four): (Float4, Float4)) {
    let t = thread_idx().x;
    let (row, kk) = (t / (BK / 4), 4 * (t % (BK / 4)));
    // SAFETY: kk + j < BK, row < BM; B's float4 at (t / 32, 4·(t % 32)) is inside its dense,
    // 16-byte aligned rows.
    unrolled::<4>(|j| unsafe { a_slice.set_unchecked(kk + j, row, a_four.0[j as usize]) });
    unsafe { b_slice.set4_unchecked(t / (BN / 4), 4 * (t % (BN / 4)), b_four) };
}

/// `acc += ` the step's outer products, this lane's 2×2 blocks of 4×4.
#[inline(always)]
fn multiply(Slices { a: a_slice, b: b_slice }: Slices, acc: &mut Block) {
    let (row0, col0) = origin();
    // Kept as a loop: unrolled, LLVM hoists several steps' loads and the registers run out.
    for kk in 0..BK {
        // SAFETY: kk < BK; rows row0 + 32i + 4 ≤ BM and columns col0 + 16j + 4 ≤ BN; all offsets
        // multiples of 4 in rows of pitch 132 and 128: aligned float4.
        let (a0, a1, b0, b1) = unsafe {
            (
                a_slice.get4_unchecked(kk, row0),
                a_slice.get4_unchecked(kk, row0 + 2 * LANE_ROWS * 2),
                b_slice.get4_unchecked(kk, col0),
                b_slice.get4_unchecked(kk, col0 + 2 * LANE_COLS * 2),
            )
        };
        let column: [f32; TM as usize] = core::array::from_fn(|i| if i < 4 { a0.0[i] } else { a1.0[i - 4] });
        let row: [f32; TN as usize] = core::array::from_fn(|j| if j < 4 { b0.0[j] } else { b1.0[j - 4] });
        add_outer_product(acc, &column, &row);
    }
}

kernel! {
    /// `C = A·B`, a 128×128 tile per block, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let buffers = Buffers::carve();
        let pair = |step: u32| {
            if step.is_multiple_of(2) {
                Slices { a: buffers.a0, b: buffers.b0 }
            } else {
                Slices { a: buffers.a1, b: buffers.b1 }
            }
        };
        // The same for every thread of the launch: one path, one set of barriers.
        let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b) && is_aligned4(c);
        let steps = k.div_ceil(BK);
        let mut acc: Block = [[0.0; TN as usize]; TM as usize];
        // SAFETY (every staging): forwarded from the kernel's contract (and the shape check for
        // the 16-byte path); KERNEL launches THREADS threads; a pair is written only after the
        // barrier that ends the last step reading it.
        unsafe {
            if vector {
                store_prefetched(pair(0), prefetch((a, b), (m, n, k), 0));
            } else {
                stage_scalar(pair(0), (a, b), (m, n, k), 0);
            }
        }
        sync_threads();
        for step in 0..steps {
            let next = step + 1 < steps;
            // The next step's loads leave before this step's arithmetic.
            let fetched = if vector && next {
                Some(unsafe { prefetch((a, b), (m, n, k), (step + 1) * BK) })
            } else {
                None
            };
            multiply(pair(step), &mut acc);
            if let Some(fetched) = fetched {
                store_prefetched(pair(step + 1), fetched);
            } else if next {
                unsafe { stage_scalar(pair(step + 1), (a, b), (m, n, k), (step + 1) * BK) };
            }
            // The next pair is complete, and this one read by everyone, before either is used.
            sync_threads();
        }
        let (tile_row, tile_col) = tile_origin();
        let (row0, col0) = origin();
        unrolled::<TM>(|i| {
            let global_row = tile_row + row0 + (i / 4) * 2 * LANE_ROWS * 2 + i % 4;
            unrolled::<2>(|h| {
                let global_col = tile_col + col0 + h * 2 * LANE_COLS * 2;
                let four: [f32; 4] = core::array::from_fn(|c| acc[i as usize][4 * h as usize + c]);
                if vector {
                    if global_row < m && global_col < n {
                        // SAFETY: inside C (n a multiple of 4: the float4 is wholly inside), aligned.
                        unsafe { store4(c.add((global_row * n + global_col) as usize), Float4(four)) };
                    }
                } else {
                    unrolled::<4>(|j| {
                        if global_row < m && global_col + j < n {
                            // SAFETY: inside C.
                            unsafe { global_store(c.add((global_row * n + global_col + j) as usize), four[j as usize]) };
                        }
                    });
                }
            });
        });
    }
}

/// One block of 256 threads per 128×128 tile of C; two pairs of slices (16.3 KiB); two blocks per SM.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Buffers::BYTES),
    grid: |p| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
    bounds: LaunchBounds::min_blocks_per_sm(2),
};
