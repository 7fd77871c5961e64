//! f32 products with 9–16 rows in A on the CUDA cores, B streamed once. [`super::small_m`] holds
//! the step's values of A in registers beside its sums, which stops at eight rows (at sixteen,
//! ptxas spilled): sixteen rows then took two row groups, each block reading B again and one
//! block residing per SM. Here the block stages its sixteen rows of A in shared memory, a chunk
//! of [`CHUNK`] k at a time, and each lane reads a row's four values of a step in one broadcast
//! 16-byte load, so a lane holds sixteen rows × four columns of sums and a step's B, not A.
//!
//! Otherwise as [`super::small_m`]: a block takes a strip of 128 columns and a run of k; its warps
//! take the run's rows four at a time; the warps' sums meet in shared memory (the bytes A's chunk
//! had) and the runs' in C. Sixty-four sums a lane leave room for one block per SM, so each warp
//! keeps two steps of B in flight ahead of the one it multiplies. More rows than sixteen go to
//! further blocks beside the same strip (grid x, the row group fastest).

use super::Matmul;
use super::k_runs::{run_of_k, splits_to_fill};
use super::small_m::{self, BLOCK_STEP, F32, MIN_RUN, Operands, STEP, THREADS, aligned, finish, row_of_b};
use ptxkit::device::{
    DynamicShared, Float4, MatrixLayout, block_idx, fma, lane_id, sync_threads, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// Rows of A per block.
pub const ROWS: u32 = 16;
/// The most rows of A for which `auto` takes this kernel: at 24 and 32 rows (two row groups, B
/// read twice) split-k's 64×128 tile ran 1.1–1.4× faster (docs/perf-log.md, change 149).
pub const MAX_ROWS: u32 = 16;
/// Columns of B per lane: one 16-byte load of f32.
const W: usize = 4;
/// Columns of C per block.
pub const COLUMNS: u32 = 32 * W as u32;
/// k per chunk of A staged in shared memory: a whole number of the block's steps.
pub const CHUNK: u32 = 16 * BLOCK_STEP;
/// A's chunk in shared memory: its rows padded by four floats, which keeps each row's quads
/// 16-byte aligned and the staging's stores of consecutive lanes on consecutive banks.
const A_LAYOUT: MatrixLayout = MatrixLayout {
    rows: ROWS,
    cols: CHUNK,
    pitch: CHUNK + 4,
};

/// Bytes of dynamic shared memory a block needs: A's chunk, or, once the run is done, the warps'
/// meeting (the same bytes, used one after the other).
pub const fn shared_bytes() -> u32 {
    let meeting = small_m::shared_bytes(ROWS as usize, W);
    let chunk = A_LAYOUT.bytes::<f32>();
    if meeting > chunk { meeting } else { chunk }
}

/// Stages A's rows `row0..row0 + ROWS` at k `from..from + CHUNK` in `staged` (the f32 values the
/// product reads), zeros past m and past `end`. `VECTOR`: k a multiple of 4 and A aligned to 16
/// bytes, so that every four of a row are one load.
///
/// # Safety
/// `a` holds m·k elements; `end` ≤ k, a multiple of 4 where `VECTOR`; every thread of the block
/// calls it.
#[inline(always)]
unsafe fn stage_a<O: Operands, const VECTOR: bool>(
    a: *const O::Element,
    staged: &ptxkit::device::SharedMatrix<f32>,
    (m, k, row0, from, end): (u32, u32, u32, u32, u32),
) {
    let t = thread_idx().x;
    if VECTOR {
        const QUADS: u32 = ROWS * CHUNK / 4;
        unrolled::<{ QUADS / THREADS }>(|j| {
            let i = t + j * THREADS;
            let (r, col) = (i / (CHUNK / 4), 4 * (i % (CHUNK / 4)));
            let mut four = [0.0f32; 4];
            if row0 + r < m && from + col < end {
                // SAFETY: the row is inside A and the four k inside it (end is a multiple of 4).
                four = unsafe { O::four(a.add(((row0 + r) * k + from + col) as usize)) };
            }
            // SAFETY: r < ROWS, col + 4 ≤ CHUNK, col and the pitch multiples of 4.
            unsafe { staged.set4_unchecked(r, col, Float4(four)) };
        });
    } else {
        unrolled::<{ ROWS * CHUNK / THREADS }>(|j| {
            let i = t + j * THREADS;
            let (r, col) = (i / CHUNK, i % CHUNK);
            let mut x = 0.0;
            if row0 + r < m && from + col < end {
                // SAFETY: inside A.
                x = O::value(unsafe { *a.add(((row0 + r) * k + from + col) as usize) });
            }
            staged.set(r, col, x);
        });
    }
}

/// This warp's sums over its rows of the run `begin..end` (the module's doc): sixteen rows of A
/// from `row0`, W columns of B from `col`. `VECTOR` as [`small_m`]'s: whole 16-byte loads of B and
/// A.
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements; `end` ≤ k is k or a multiple of [`BLOCK_STEP`]; every
/// thread of the block calls it, the block's dynamic shared memory [`shared_bytes`].
#[inline(always)]
#[allow(clippy::type_complexity)]
unsafe fn stream<O: Operands, const VECTOR: bool>(
    (a, b): (*const O::Element, *const O::Element),
    ((m, n, k), (begin, end), (row0, col, warp)): ((u32, u32, u32), (u32, u32), (u32, u32, u32)),
) -> [[f32; W]; ROWS as usize] {
    let staged = DynamicShared::new().named_matrix::<f32>("a_chunk", A_LAYOUT);
    let mut acc = [[0.0f32; W]; ROWS as usize];
    let rows_at = |kk: u32| {
        let mut rows = [[0u32; 4]; STEP as usize];
        unrolled::<STEP>(|u| {
            if VECTOR || kk + u < end {
                // SAFETY: kk + u < end ≤ k (on the 16-byte path kk and end are multiples of 4).
                rows[u as usize] = unsafe { row_of_b::<O, W>(b, (n, kk + u, col), VECTOR) };
            }
        });
        rows
    };
    let zeros = [[0u32; 4]; STEP as usize];
    let mut kk = begin + warp * STEP;
    // Two steps of B in flight ahead of the one multiplied: one block resides per SM, its eight
    // warps all the loads the SM has.
    let mut next = if kk < end { rows_at(kk) } else { zeros };
    let mut after_next = if kk + BLOCK_STEP < end {
        rows_at(kk + BLOCK_STEP)
    } else {
        zeros
    };
    let mut from = begin;
    while from < end {
        let chunk_end = if end - from < CHUNK { end } else { from + CHUNK };
        // The chunk before is read by every warp before this one replaces it.
        sync_threads();
        // SAFETY: forwarded from the caller; every thread of the block is here.
        unsafe { stage_a::<O, VECTOR>(a, &staged, (m, k, row0, from, end)) };
        sync_threads();
        while kk < chunk_end {
            let current = next;
            next = after_next;
            let ahead = kk + 2 * BLOCK_STEP;
            if ahead < end {
                after_next = rows_at(ahead);
            }
            unrolled_to(ROWS, |r| {
                // SAFETY: r < ROWS; kk - from is a multiple of 4 below CHUNK (steps of 4 from
                // `from`, a whole number of steps per chunk).
                let four = unsafe { staged.get4_unchecked(r, kk - from) }.0;
                unrolled::<STEP>(|u| {
                    unrolled_to(W as u32, |q| {
                        let x = O::widen(current[u as usize], q);
                        let (r, u, q) = (r as usize, u as usize, q as usize);
                        acc[r][q] = fma(four[u], x, acc[r][q]);
                    });
                });
            });
            kk += BLOCK_STEP;
        }
        from = chunk_end;
    }
    // The meeting reuses A's bytes.
    sync_threads();
    acc
}

/// `C = A·B` for sixteen rows of A per block (the module's doc).
///
/// # Safety
/// `a`, `b`, `c` hold m·k, k·n and m·n elements; where the grid is more than one deep, `arrivals`
/// holds a zeroed counter per block of the grid's first layer; the block has [`THREADS`] threads
/// and [`shared_bytes`] of dynamic shared memory; the grid is [`grid`]'s.
#[inline(always)]
pub unsafe fn small_m16<O: Operands>(
    (a, b, c): (*const O::Element, *const O::Element, *mut f32),
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
) {
    const { assert!(W as u32 == O::PER_LOAD) };
    let (begin, end, runs) = run_of_k::<BLOCK_STEP>(k);
    if begin == end {
        // Past k: not one of the runs (the whole block leaves).
        return;
    }
    let element = core::mem::size_of::<O::Element>();
    // The same for every thread of the launch.
    let vector = k.is_multiple_of(4) && n.is_multiple_of(W as u32) && aligned(a, 4 * element) && aligned(b, 16);
    let groups = m.div_ceil(ROWS);
    let row0 = (block_idx().x % groups) * ROWS;
    let col = (block_idx().x / groups) * COLUMNS + lane_id() * W as u32;
    let warp = thread_idx().x / 32;
    let at = ((m, n, k), (begin, end), (row0, col, warp));
    // Two loops, so that the 16-byte one carries no test of the path.
    // SAFETY: forwarded from the caller.
    let acc = unsafe {
        if vector {
            stream::<O, true>((a, b), at)
        } else {
            stream::<O, false>((a, b), at)
        }
    };
    // SAFETY: forwarded; an f32 C's runs meet in C itself.
    unsafe {
        finish::<{ ROWS as usize }, W, f32>(acc, (m, n, row0, col, warp), runs, (c, arrivals, core::ptr::null_mut()))
    }
}

/// A block's fixed cost (its first loads, A's first chunk, the meetings) in rows of k: fitted to
/// 16 × 28672 × 4096 on an H100, whose 224 strips took as long in 7 waves of 4 runs as in 2 of
/// one run (docs/perf-log.md, change 149).
const FIXED_ROWS: u32 = 256;

/// The launch grid: a block per row group of sixteen and strip of [`COLUMNS`] (x, the row group
/// fastest), k split so that the waves of the device's resident blocks (one per SM) finish
/// soonest ([`splits_to_fill`]: one wave of 80 strips left 52 of 132 SMs idle).
pub const fn grid((m, n, k): (u32, u32, u32), device: ptxkit::Occupancy) -> Dim3 {
    let tiles = m.div_ceil(ROWS) * n.div_ceil(COLUMNS);
    Dim3::new(
        tiles,
        1,
        splits_to_fill(tiles, device.resident_blocks, k, (MIN_RUN, FIXED_ROWS)),
    )
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks): f32 operands, sixteen rows of A per block,
    /// staged in shared memory.
    pub unsafe fn matmul_small_m16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the block and grid.
        unsafe { small_m16::<F32>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The launch: [`THREADS`] threads, [`shared_bytes`], [`grid`].
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_small_m16,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(shared_bytes()),
    grid: |p, device| grid((p.m, p.n, p.k), device),
};

#[cfg(test)]
mod tests {
    use super::*;

    /// On the emulator's 8 places, twice (the counters must be back at zero), C poisoned: the
    /// 16-byte path and the element-wise one (n not a multiple of 4, k odd), fewer rows than
    /// sixteen and several row groups, k in one chunk and in several, split and not.
    #[test]
    fn every_row_count_and_edge_meets_in_poisoned_c() {
        for shape in [
            (1, 1, 1),
            (16, 128, 1024),
            (16, 128, 4096),
            (9, 129, 1000),
            (13, 256, 517),
            (17, 100, 300),
            (33, 131, 64),
            (16, 4, 2051),
            (15, 8, 9001),
        ] {
            crate::matmul::k_runs::check_runs_meet(&KERNEL, shape);
        }
    }

    #[test]
    fn k_splits_where_the_waves_finish_soonest() {
        let device = ptxkit::Occupancy { resident_blocks: 132 };
        // 80 strips: 3 runs in 2 waves (2 × (2731 + 256) rows of time), where one wave left 52
        // SMs idle (8448) and 8 runs in 5 waves cost 5 blocks' fixed costs (6400).
        assert_eq!(grid((16, 10240, 8192), device), Dim3::new(80, 1, 3));
        // 224 strips: one run in 2 waves (8704), not 4 in 7 (8960).
        assert_eq!(grid((16, 28672, 4096), device), Dim3::new(224, 1, 1));
        // 96 strips: 4 runs in 3 waves (3840) against one (4352).
        assert_eq!(grid((16, 12288, 4096), device), Dim3::new(96, 1, 4));
        // 32 strips: one wave of 4 runs; two row groups of 64 strips: one run, one wave.
        assert_eq!(grid((16, 4096, 4096), device), Dim3::new(32, 1, 4));
        assert_eq!(grid((32, 8192, 14336), device), Dim3::new(128, 1, 1));
        // k too short for a second run.
        assert_eq!(grid((16, 256, 255), device), Dim3::new(2, 1, 1));
    }

    #[test]
    fn a_chunk_and_the_meeting_share_the_bytes() {
        assert_eq!(A_LAYOUT.bytes::<f32>(), 16 * 516 * 4);
        assert_eq!(shared_bytes(), A_LAYOUT.bytes::<f32>());
        assert!(CHUNK.is_multiple_of(BLOCK_STEP));
    }
}
