//! Warp tiling with register-prefetched double buffering, at several tile sizes. A block's BM×BN
//! tile of C is split among its warps as (32·RI)×(16·RJ) warp tiles; a warp's lanes stand 8 × 4
//! and each holds RI × RJ blocks of 4×4 outputs spread over its warp's tile (rows 32 apart,
//! columns 16 apart). For each k the lanes of a warp then read only 8·RI distinct 16-byte words
//! of A's slice and 4·RJ of B's, each run contiguous: no bank conflict, where the 8×8-contiguous
//! layout of [`super::vectorized`] met two lanes per bank on B. Meanwhile the next step's float4s
//! of A and B travel from global memory into registers, and go to the other pair of slices after
//! the multiply: one barrier per step, and the loads overlap the arithmetic.
//!
//! The configurations ([`KERNEL`] 128×128, [`KERNEL_128X64`], [`KERNEL_64X64`], and the wide ones
//! with 64×64 warp tiles, [`KERNEL_128X128_WIDE`] and [`KERNEL_128X256_WIDE`]) are one algorithm;
//! the host picks among them for the device and the shape (`--variant auto`): large tiles reuse
//! each loaded element more, small ones give a small product enough blocks to fill the GPU.
//!
//! As in [`super::vectorized`], the 16-byte path needs k and n multiples of 4 and aligned
//! matrices; other shapes load one element at a time, with the same overlap (but in the wide
//! 128×128 tile, see [`products`]).

use super::Matmul;
use crate::inlined::is_aligned4;
use ptxkit::device::{
    DynamicShared, Float4, MatrixLayout, SharedMatrix, WARP_SIZE, block_idx, fma, global_store, lane_id, load4, store4,
    sync_threads, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// Depth of a slice along k.
pub const BK: u32 = 8;
/// Lanes along a warp tile's rows and columns (8 × 4 = 32).
const LANE_ROWS: u32 = 8;
const LANE_COLS: u32 = WARP_SIZE / LANE_ROWS;
/// Rows and columns between a lane's 4×4 blocks: the lanes' span.
pub(super) const BLOCK_ROW_STRIDE: u32 = 4 * LANE_ROWS;
pub(super) const BLOCK_COL_STRIDE: u32 = 4 * LANE_COLS;
/// Padding of A's transposed slice rows: the transposing stores of lanes 4 rows apart along k
/// would otherwise meet in one bank.
const A_PAD: u32 = 4;
/// Float4s of each matrix a thread prefetches per step, at most (the configurations need 1 or 2).
pub(super) const MAX_FOURS: usize = 2;

/// A lane's outputs: `acc[i][j][r][c]` is row 32·i + r, column 16·j + c of its span.
pub(super) type Acc<const RI: usize, const RJ: usize> = [[[[f32; 4]; 4]; RJ]; RI];

/// Threads of a configuration: a warp per warp tile.
pub const fn threads(bm: u32, bn: u32, ri: usize, rj: usize) -> u32 {
    let (wm, wn) = (BLOCK_ROW_STRIDE * ri as u32, BLOCK_COL_STRIDE * rj as u32);
    assert!(bm.is_multiple_of(wm) && bn.is_multiple_of(wn), "whole warp tiles");
    (bm / wm) * (bn / wn) * WARP_SIZE
}

/// The slices' layouts: A's BK×BM (transposed, padded), B's BK×BN.
pub(super) const fn layouts(bm: u32, bn: u32) -> (MatrixLayout, MatrixLayout) {
    (
        MatrixLayout {
            rows: BK,
            cols: bm,
            pitch: bm + A_PAD,
        },
        MatrixLayout::dense(BK, bn),
    )
}

/// Shared bytes of a configuration: two pairs of slices.
pub const fn shared_bytes(bm: u32, bn: u32) -> u32 {
    let (a, b) = layouts(bm, bn);
    let mut end = 0;
    let mut pair = 0;
    while pair < 2 {
        end = SharedMatrix::<f32>::region_end(end, a);
        end = SharedMatrix::<f32>::region_end(end, b);
        pair += 1;
    }
    end
}

/// One pair of slices.
#[derive(Clone, Copy)]
pub(super) struct Slices {
    pub(super) a: SharedMatrix<f32>,
    pub(super) b: SharedMatrix<f32>,
}

/// Both pairs, carved as [`shared_bytes`] counts them.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) fn carve<const BM: u32, const BN: u32>() -> [Slices; 2] {
    let (a, b) = layouts(BM, BN);
    let mut shared = DynamicShared::new();
    let first = Slices {
        a: shared.named_matrix("a0", a),
        b: shared.named_matrix("b0", b),
    };
    let second = Slices {
        a: shared.named_matrix("a1", a),
        b: shared.named_matrix("b1", b),
    };
    [first, second]
}

/// The block's tile: its first row and column of C.
#[inline(always)]
pub(super) fn tile_origin<const BM: u32, const BN: u32>() -> (u32, u32) {
    (block_idx().y * BM, block_idx().x * BN)
}

/// This lane's first row and column in the block's tile; its rows are `row + 32·i + r` and its
/// columns `col + 16·j + c` for i < RI, j < RJ and r, c < 4.
#[inline(always)]
pub(super) fn origin<const BN: u32, const RI: usize, const RJ: usize>() -> (u32, u32) {
    let (wm, wn) = (BLOCK_ROW_STRIDE * RI as u32, BLOCK_COL_STRIDE * RJ as u32);
    let warp = thread_idx().x / WARP_SIZE;
    let lane = lane_id();
    let (warp_row, warp_col) = (warp / (BN / wn) * wm, warp % (BN / wn) * wn);
    (warp_row + lane / LANE_COLS * 4, warp_col + lane % LANE_COLS * 4)
}

/// Where this thread's float4 `r` of A's slice goes: (row of the tile, first k); and of B's:
/// (k, first column).
#[inline(always)]
pub(super) fn a_spot<const THREADS: u32>(r: u32) -> (u32, u32) {
    let i = thread_idx().x + THREADS * r;
    (i / (BK / 4), 4 * (i % (BK / 4)))
}
#[inline(always)]
pub(super) fn b_spot<const BN: u32, const THREADS: u32>(r: u32) -> (u32, u32) {
    let i = thread_idx().x + THREADS * r;
    (i / (BN / 4), 4 * (i % (BN / 4)))
}

/// The step at `k0`'s float4s of A and B for this thread, zeros outside A, B and the run (k ≥
/// `end`): what [`store_prefetched`] puts into a pair of slices.
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements, 16-byte aligned, k and n multiples of 4; `end` ≤ k is a
/// multiple of 4.
#[inline(always)]
unsafe fn prefetch<const BM: u32, const BN: u32, const THREADS: u32>(
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    end: u32,
    k0: u32,
) -> ([Float4; MAX_FOURS], [Float4; MAX_FOURS]) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    let mut fours = ([Float4([0.0; 4]); MAX_FOURS], [Float4([0.0; 4]); MAX_FOURS]);
    unrolled_to(BM * BK / 4 / THREADS, |r| {
        let (row, kk) = a_spot::<THREADS>(r);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        if global_row < m && global_k < end {
            // SAFETY: inside A and the run; a float4 along a row lies wholly inside both, aligned.
            fours.0[r as usize] = unsafe { load4(a.add((global_row * k + global_k) as usize)) };
        }
    });
    unrolled_to(BK * BN / 4 / THREADS, |r| {
        let (kb, col) = b_spot::<BN, THREADS>(r);
        let (global_kb, global_col) = (k0 + kb, tile_col + col);
        if global_kb < end && global_col < n {
            // SAFETY: as for A (n a multiple of 4).
            fours.1[r as usize] = unsafe { load4(b.add((global_kb * n + global_col) as usize)) };
        }
    });
    fours
}

/// Stores what [`prefetch`] loaded: A's float4s transposed (four scalar stores each; 32 banks per
/// warp with the padded pitch), B's whole.
#[inline(always)]
fn store_prefetched<const BM: u32, const BN: u32, const THREADS: u32>(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a_fours, b_fours): ([Float4; MAX_FOURS], [Float4; MAX_FOURS]),
) {
    unrolled_to(BM * BK / 4 / THREADS, |r| {
        let (row, kk) = a_spot::<THREADS>(r);
        // SAFETY: kk + j < BK, row < BM.
        unrolled::<4>(|j| unsafe { a_slice.set_unchecked(kk + j, row, a_fours[r as usize].0[j as usize]) });
    });
    unrolled_to(BK * BN / 4 / THREADS, |r| {
        let (kb, col) = b_spot::<BN, THREADS>(r);
        // SAFETY: inside B's dense slice, 16-byte aligned (col a multiple of 4, rows of BN floats).
        unsafe { b_slice.set4_unchecked(kb, col, b_fours[r as usize]) };
    });
}

/// Elements of A and B a thread carries per step on the 4-byte path, at most: as many as the
/// 16-byte path's float4s hold.
const MAX_SCALARS: usize = 4 * MAX_FOURS;

/// Where this thread's element `r` of A's slice goes on the 4-byte path: (row of the tile, k); and
/// of B's: (k, column). Consecutive threads take consecutive k of a row of A and consecutive
/// columns of a row of B, so that the loads share sectors and the stores meet no bank twice.
#[inline(always)]
pub(super) fn a_scalar_spot<const THREADS: u32>(r: u32) -> (u32, u32) {
    let i = thread_idx().x + THREADS * r;
    (i / BK, i % BK)
}
#[inline(always)]
pub(super) fn b_scalar_spot<const BN: u32, const THREADS: u32>(r: u32) -> (u32, u32) {
    let i = thread_idx().x + THREADS * r;
    (i / BN, i % BN)
}

/// The 4-byte path's [`prefetch`]: the step at `k0`'s elements of A and B for this thread, zeros
/// outside A, B and the run (any shape, any alignment).
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements; `end` ≤ k.
#[inline(always)]
unsafe fn prefetch_scalar<const BM: u32, const BN: u32, const THREADS: u32>(
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    end: u32,
    k0: u32,
) -> ([f32; MAX_SCALARS], [f32; MAX_SCALARS]) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    let mut scalars = ([0.0; MAX_SCALARS], [0.0; MAX_SCALARS]);
    unrolled_to(BM * BK / THREADS, |r| {
        let (row, kk) = a_scalar_spot::<THREADS>(r);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        if global_row < m && global_k < end {
            // SAFETY: inside A.
            scalars.0[r as usize] = unsafe { *a.add((global_row * k + global_k) as usize) };
        }
    });
    unrolled_to(BK * BN / THREADS, |r| {
        let (kk, col) = b_scalar_spot::<BN, THREADS>(r);
        let (global_k, global_col) = (k0 + kk, tile_col + col);
        if global_k < end && global_col < n {
            // SAFETY: inside B.
            scalars.1[r as usize] = unsafe { *b.add((global_k * n + global_col) as usize) };
        }
    });
    scalars
}

/// Stores what [`prefetch_scalar`] loaded: A's elements transposed, B's as they lie.
#[inline(always)]
fn store_scalars<const BM: u32, const BN: u32, const THREADS: u32>(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a_scalars, b_scalars): ([f32; MAX_SCALARS], [f32; MAX_SCALARS]),
) {
    unrolled_to(BM * BK / THREADS, |r| {
        let (row, kk) = a_scalar_spot::<THREADS>(r);
        // SAFETY: kk < BK, row < BM.
        unsafe { a_slice.set_unchecked(kk, row, a_scalars[r as usize]) };
    });
    unrolled_to(BK * BN / THREADS, |r| {
        let (kk, col) = b_scalar_spot::<BN, THREADS>(r);
        // SAFETY: kk < BK, col < BN.
        unsafe { b_slice.set_unchecked(kk, col, b_scalars[r as usize]) };
    });
}

/// `acc += ` the step's outer products, this lane's RI × RJ blocks of 4×4.
#[inline(always)]
pub(super) fn multiply<const BN: u32, const RI: usize, const RJ: usize>(
    Slices { a: a_slice, b: b_slice }: Slices,
    acc: &mut Acc<RI, RJ>,
) {
    let (row0, col0) = origin::<BN, RI, RJ>();
    // Kept as a loop: unrolled, LLVM hoists several steps' loads and the registers run out.
    for kk in 0..BK {
        // SAFETY: kk < BK; rows row0 + 32i + 4 ≤ BM and columns col0 + 16j + 4 ≤ BN; all offsets
        // multiples of 4 in rows of pitch BM + 4 and BN: aligned float4.
        let column: [Float4; RI] =
            core::array::from_fn(|i| unsafe { a_slice.get4_unchecked(kk, row0 + BLOCK_ROW_STRIDE * i as u32) });
        let row: [Float4; RJ] =
            core::array::from_fn(|j| unsafe { b_slice.get4_unchecked(kk, col0 + BLOCK_COL_STRIDE * j as u32) });
        outer_product::<RI, RJ, false>(column, row, acc);
    }
}

/// `acc += column × row`: one k's fragments of A (4·RI rows) and B (4·RJ columns) into this
/// lane's blocks. One element of A against all 4·RJ of B before the next: ptxas keeps this order,
/// marks the A operand for reuse, and the last shared load of a k is first needed 32 FFMA in.
/// Block by block (A0×B0, A0×B1, …) it reordered the FFMAs so that the fifth waited on that load,
/// and ran slower at 4096³ (measured: docs/perf-log.md, change 28).
///
/// `SERPENTINE` walks B backwards on every other element of A, so that each change of A reuses
/// the B operand just read. ptxas then allocates and schedules the multistage loop differently:
/// faster there, slower in the two-stage warp tiles (measured: docs/perf-log.md, change 98).
#[inline(always)]
pub(super) fn outer_product<const RI: usize, const RJ: usize, const SERPENTINE: bool>(
    column: [Float4; RI],
    row: [Float4; RJ],
    acc: &mut Acc<RI, RJ>,
) {
    unrolled_to(RI as u32, |i| {
        unrolled::<4>(|r| {
            let a = column[i as usize].0[r as usize];
            let backwards = SERPENTINE && (i * 4 + r) % 2 == 1;
            unrolled_to(RJ as u32, |step_j| {
                unrolled::<4>(|step_c| {
                    let (j, c) = if backwards {
                        (RJ as u32 - 1 - step_j, 3 - step_c)
                    } else {
                        (step_j, step_c)
                    };
                    let x = &mut acc[i as usize][j as usize][r as usize][c as usize];
                    *x = fma(a, row[j as usize].0[c as usize], *x);
                })
            });
        })
    });
}

/// The slices of the step at `k0`, one element at a time, each stored as it arrives, zeros outside
/// A, B and the run (any shape): [`prefetch_scalar`] and [`store_scalars`] in one, for the form
/// of [`products`] that stages the 4-byte path between steps.
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements; `end` ≤ k.
#[inline(always)]
unsafe fn stage_scalar<const BM: u32, const BN: u32, const THREADS: u32>(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    end: u32,
    k0: u32,
) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    unrolled_to(BM * BK / THREADS, |r| {
        let (row, kk) = a_scalar_spot::<THREADS>(r);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        // SAFETY: inside A.
        let value = if global_row < m && global_k < end {
            unsafe { *a.add((global_row * k + global_k) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, row < BM.
        unsafe { a_slice.set_unchecked(kk, row, value) };
    });
    unrolled_to(BK * BN / THREADS, |r| {
        let (kk, col) = b_scalar_spot::<BN, THREADS>(r);
        let (global_k, global_col) = (k0 + kk, tile_col + col);
        // SAFETY: inside B.
        let value = if global_k < end && global_col < n {
            unsafe { *b.add((global_k * n + global_col) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, col < BN.
        unsafe { b_slice.set_unchecked(kk, col, value) };
    });
}

/// Checks at compile time that a configuration's block is a warp per warp tile and stages whole
/// float4s, as many as [`MAX_FOURS`] at most (hence at most [`MAX_SCALARS`] elements).
pub(super) const fn check_configuration<
    const BM: u32,
    const BN: u32,
    const RI: usize,
    const RJ: usize,
    const THREADS: u32,
>() {
    assert!(THREADS == threads(BM, BN, RI, RJ), "a warp per warp tile");
    let (a_fours, b_fours) = (BM * BK / 4, BK * BN / 4);
    assert!(
        a_fours.is_multiple_of(THREADS) && b_fours.is_multiple_of(THREADS),
        "whole float4s per thread"
    );
    assert!(a_fours / THREADS <= MAX_FOURS as u32 && b_fours / THREADS <= MAX_FOURS as u32);
}

/// The steps from `begin` to `end` (the run of k this block multiplies): each step's slices are
/// fetched into registers by `fetch` before the previous step's products and stored by `store`
/// after them, into the other pair of slices. One barrier per step.
#[inline(always)]
fn pipeline<const BN: u32, const RI: usize, const RJ: usize, T>(
    (begin, end): (u32, u32),
    fetch: impl Fn(u32) -> T,
    store: impl Fn(Slices, T),
    pairs: [Slices; 2],
    acc: &mut Acc<RI, RJ>,
) {
    // A select, not an index: an array indexed at run time would live in local memory.
    let pair = |step: u32| if step.is_multiple_of(2) { pairs[0] } else { pairs[1] };
    let steps = (end - begin).div_ceil(BK);
    store(pair(0), fetch(begin));
    sync_threads();
    for step in 0..steps {
        let next = step + 1 < steps;
        // The next step's loads leave before this step's arithmetic.
        let fetched = if next {
            Some(fetch(begin + (step + 1) * BK))
        } else {
            None
        };
        multiply::<BN, RI, RJ>(pair(step), acc);
        if let Some(fetched) = fetched {
            store(pair(step + 1), fetched);
        }
        // The next pair is complete, and this one read by everyone, before either is used.
        sync_threads();
    }
}

/// This lane's sums over k from `begin` to `end` (`begin` a multiple of [`BK`], `end` ≤ k) of its
/// RI × RJ blocks of the block's BM×BN tile of A·B: 16-byte loads where `vector` (k and n
/// multiples of 4, A and B 16-byte aligned), overlapping the products; 4-byte ones elsewhere,
/// overlapping them too where `OVERLAP_SCALARS`, else staged between two steps' products.
///
/// Why both forms (the forms' PTX side by side in one process: docs/perf-log.md, change 91, and
/// "Figures moved from code comments"): overlapping the 4-byte path takes a second loop, one per
/// path, and with it ptxas scheduled the wide 128×128 tile's 16-byte loop slower at 8192³, while
/// the other tiles ran level there and every tile faster at 4097×3073×2049. So the wide 128×128
/// keeps the staged 4-byte path (the host never takes it for odd shapes) and the others overlap
/// it. The schedules move by a few per cent with small changes to the PTX: measure a change to
/// this function on every tile (docs/perf-log.md, changes 91–93).
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements; the block has `THREADS` = [`threads`]`(BM, BN, RI, RJ)`
/// threads and [`shared_bytes`]`(BM, BN)` of dynamic shared memory; `vector` is the same for the
/// whole block and only where its conditions hold; `end` is a multiple of 4 where `vector`.
#[inline(always)]
pub(super) unsafe fn products<
    const BM: u32,
    const BN: u32,
    const RI: usize,
    const RJ: usize,
    const THREADS: u32,
    const OVERLAP_SCALARS: bool,
>(
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    (begin, end): (u32, u32),
    vector: bool,
) -> Acc<RI, RJ> {
    const { check_configuration::<BM, BN, RI, RJ, THREADS>() };
    let pairs = carve::<BM, BN>();
    let mut acc: Acc<RI, RJ> = [[[[0.0; 4]; 4]; RJ]; RI];
    // SAFETY (every fetch and staging): forwarded from the caller; a pair is written only after
    // the barrier that ends the last step reading it.
    let fetch = |k0| unsafe { prefetch::<BM, BN, THREADS>((a, b), (m, n, k), end, k0) };
    let fetch_scalars = |k0| unsafe { prefetch_scalar::<BM, BN, THREADS>((a, b), (m, n, k), end, k0) };
    if OVERLAP_SCALARS {
        if vector {
            pipeline::<BN, RI, RJ, _>(
                (begin, end),
                fetch,
                store_prefetched::<BM, BN, THREADS>,
                pairs,
                &mut acc,
            );
        } else {
            pipeline::<BN, RI, RJ, _>(
                (begin, end),
                fetch_scalars,
                store_scalars::<BM, BN, THREADS>,
                pairs,
                &mut acc,
            );
        }
        return acc;
    }
    // One loop: the 16-byte path's loads overlap the products; the 4-byte path's are staged after
    // them.
    // SAFETY: as above.
    let stage_scalars = |pair, k0| unsafe { stage_scalar::<BM, BN, THREADS>(pair, (a, b), (m, n, k), end, k0) };
    // A select, not an index: an array indexed at run time would live in local memory.
    let pair = |step: u32| if step.is_multiple_of(2) { pairs[0] } else { pairs[1] };
    if vector {
        store_prefetched::<BM, BN, THREADS>(pair(0), fetch(begin));
    } else {
        stage_scalars(pair(0), begin);
    }
    sync_threads();
    let steps = (end - begin).div_ceil(BK);
    for step in 0..steps {
        let next = step + 1 < steps;
        let k0 = begin + (step + 1) * BK;
        let fetched = if vector && next { Some(fetch(k0)) } else { None };
        multiply::<BN, RI, RJ>(pair(step), &mut acc);
        if let Some(fetched) = fetched {
            store_prefetched::<BM, BN, THREADS>(pair(step + 1), fetched);
        } else if next {
            stage_scalars(pair(step + 1), k0);
        }
        // The next pair is complete, and this one read by everyone, before either is used.
        sync_threads();
    }
    acc
}

/// `C = A·B` with BM×BN tiles per block, (32·RI)×(16·RJ) per warp.
///
/// # Safety
/// The kernels' contract: `a`, `b`, `c` hold m·k, k·n and m·n elements; the block has
/// `THREADS` = [`threads`]`(BM, BN, RI, RJ)` threads and [`shared_bytes`]`(BM, BN)` of dynamic
/// shared memory; the grid covers C's tiles.
#[inline(always)]
unsafe fn warp_tiled<
    const BM: u32,
    const BN: u32,
    const RI: usize,
    const RJ: usize,
    const THREADS: u32,
    const OVERLAP_SCALARS: bool,
>(
    (a, b, c): (*const f32, *const f32, *mut f32),
    (m, n, k): (u32, u32, u32),
) {
    // The same for every thread of the launch: one path, one set of barriers.
    let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b) && is_aligned4(c);
    // SAFETY: forwarded from the caller; `vector` as computed; end = k.
    let acc = unsafe { products::<BM, BN, RI, RJ, THREADS, OVERLAP_SCALARS>((a, b), (m, n, k), (0, k), vector) };
    // SAFETY: forwarded from the caller; 16 bytes wide only where C is aligned and n a multiple of 4.
    unsafe { store_tile::<BM, BN, RI, RJ>(c, (m, n), acc, vector) }
}

/// Stores this lane's outputs `acc` inside C (m×n): 16 bytes at a time where `wide`, else 4.
///
/// # Safety
/// `c` holds m·n elements; where `wide`, n is a multiple of 4 and `c` is 16-byte aligned.
#[inline(always)]
pub(super) unsafe fn store_tile<const BM: u32, const BN: u32, const RI: usize, const RJ: usize>(
    c: *mut f32,
    (m, n): (u32, u32),
    acc: Acc<RI, RJ>,
    wide: bool,
) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    let (row0, col0) = origin::<BN, RI, RJ>();
    // Inlined whatever its size: out of line, it took the accumulators by reference (local
    // memory, 624 bytes of stack at 128×256).
    unrolled_to(
        RI as u32,
        #[inline(always)]
        |i| {
            unrolled::<4>(
                #[inline(always)]
                |r| {
                    let global_row = tile_row + row0 + BLOCK_ROW_STRIDE * i + r;
                    unrolled_to(RJ as u32, |j| {
                        let global_col = tile_col + col0 + BLOCK_COL_STRIDE * j;
                        let four = acc[i as usize][j as usize][r as usize];
                        if wide {
                            if global_row < m && global_col < n {
                                // SAFETY: inside C (n a multiple of 4: the float4 is wholly inside), aligned.
                                unsafe { store4(c.add((global_row * n + global_col) as usize), Float4(four)) };
                            }
                        } else {
                            unrolled::<4>(|q| {
                                if global_row < m && global_col + q < n {
                                    // SAFETY: inside C.
                                    unsafe {
                                        global_store(
                                            c.add((global_row * n + global_col + q) as usize),
                                            four[q as usize],
                                        )
                                    };
                                }
                            });
                        }
                    });
                },
            );
        },
    );
}

/// Threads of the 128×128 configuration (eight 64×32 warp tiles).
const THREADS_128X128: u32 = threads(128, 128, 2, 2);
/// Threads of the 128×64 configuration (four 64×32 warp tiles).
const THREADS_128X64: u32 = threads(128, 64, 2, 2);
/// Threads of the 64×64 configuration (four 32×32 warp tiles).
pub(super) const THREADS_64X64: u32 = threads(64, 64, 1, 2);
/// Threads of the wide configurations, 128 outputs per lane in 64×64 warp tiles: 128×128 (four
/// warps) and 128×256 (eight).
const THREADS_128X128_WIDE: u32 = threads(128, 128, 2, 4);
const THREADS_128X256_WIDE: u32 = threads(128, 256, 2, 4);

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X128), 2)]
    /// `C = A·B`, a 128×128 tile per block, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the configuration's block.
        unsafe { warp_tiled::<128, 128, 2, 2, THREADS_128X128, true>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X64), 4)]
    /// `C = A·B`, a 128×64 tile per block, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled_128x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { warp_tiled::<128, 64, 2, 2, THREADS_128X64, true>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_64X64), 4)]
    /// `C = A·B`, a 64×64 tile per block, 32×32 per warp, 1×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled_64x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { warp_tiled::<64, 64, 1, 2, THREADS_64X64, true>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X128_WIDE), 2)]
    /// `C = A·B`, a 128×128 tile per block, 64×64 per warp, 2×4 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled_128x128_wide(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { warp_tiled::<128, 128, 2, 4, THREADS_128X128_WIDE, false>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X256_WIDE), 1)]
    /// `C = A·B`, a 128×256 tile per block, 64×64 per warp, 2×4 blocks of 4×4 per lane.
    pub unsafe fn matmul_warp_tiled_128x256_wide(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { warp_tiled::<128, 256, 2, 4, THREADS_128X256_WIDE, true>((a, b, c), (m, n, k)) }
    }
}

/// The grid of a BM×BN configuration: a block per tile of C.
pub(super) fn tile_grid<const BM: u32, const BN: u32>(p: &Matmul, _: Occupancy) -> Dim3 {
    Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM))
}

/// A block of 256 threads per 128×128 tile of C; two pairs of slices (16.3 KiB); two blocks per SM.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled,
    block: Dim3::x(THREADS_128X128),
    shared: SharedMemory::of(shared_bytes(128, 128)),
    grid: tile_grid::<128, 128>,
};

/// A block of 128 threads per 128×64 tile: twice the blocks of [`KERNEL`] for the same C, four
/// per SM (the same registers per thread).
pub const KERNEL_128X64: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled_128x64,
    block: Dim3::x(THREADS_128X64),
    shared: SharedMemory::of(shared_bytes(128, 64)),
    grid: tile_grid::<128, 64>,
};

/// A block of 128 threads per 64×64 tile: four times the blocks of [`KERNEL`], half the outputs
/// per thread.
pub const KERNEL_64X64: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled_64x64,
    block: Dim3::x(THREADS_64X64),
    shared: SharedMemory::of(shared_bytes(64, 64)),
    grid: tile_grid::<64, 64>,
};

/// A block of 128 threads per 128×128 tile, 64×64 per warp: each lane's 2×4 blocks of 4×4 take
/// 128 FMAs for every 6 shared loads (64 for 4 in [`KERNEL`]), in 225 registers (204 at 128×256),
/// so two blocks per SM: 8 warps where [`KERNEL`] has 16 (docs/perf-log.md, change 87).
pub const KERNEL_128X128_WIDE: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled_128x128_wide,
    block: Dim3::x(THREADS_128X128_WIDE),
    shared: SharedMemory::of(shared_bytes(128, 128)),
    grid: tile_grid::<128, 128>,
};

/// [`KERNEL_128X128_WIDE`]'s lanes on a 128×256 tile: eight warps, one block per SM.
pub const KERNEL_128X256_WIDE: Kernel<Matmul> = Kernel {
    code: matmul_warp_tiled_128x256_wide,
    block: Dim3::x(THREADS_128X256_WIDE),
    shared: SharedMemory::of(shared_bytes(128, 256)),
    grid: tile_grid::<128, 256>,
};
