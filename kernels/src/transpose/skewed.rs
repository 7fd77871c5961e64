//! Skewed transpose: the peeled tile, with each block owning whole aligned chunks of its output.
//!
//! In [`super::peeled`] a block writes output row `o` from tile row 0, which starts wherever
//! `o · rows` falls: the chunks at both ends are shared with the neighbouring blocks and written one
//! float at a time, so that at 8191×4097 every warp runs a scalar path beside its 16-byte one (65 %
//! of the copy ceiling, docs/perf-log.md). Here the block's part of output row `o` starts at the
//! 16-byte boundary at or below its first element, up to 3 input rows earlier; the next block's
//! part starts 64 rows later, at a boundary too. So every block writes 16 whole aligned chunks per
//! output row, and reads 67 input rows (its 64 and the 3 before) as the 17 aligned chunks that
//! cover each. Only the blocks at the matrix's edges test each element; the others run straight
//! through (one test per block, uniform, so every thread reaches the barrier).

use super::{Transpose, misalignment};
use crate::device::{
    Float4, MatrixLayout, SharedMatrix, block_idx, global_store, load4, store4, sync_threads, thread_idx, unrolled,
};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 256;
/// Input rows a block owns, and input columns (output rows) it covers.
const T: u32 = 64;
/// Input rows a block reads before its own: the most an output row's part starts early.
const SKEW: u32 = 3;
/// Input rows staged per block.
const ROWS_IN: u32 = T + SKEW;
/// Aligned 16-byte chunks covering 64 input floats at any offset.
const CHUNKS_IN: u32 = T / 4 + 1;
/// A thread's input chunks (the last pass covers 115 of 256).
const PASSES_IN: u32 = (ROWS_IN * CHUNKS_IN).div_ceil(THREADS);
/// Aligned chunks of a block's part of an output row.
const CHUNKS_OUT: u32 = T / 4;
/// A thread's output chunks.
const PASSES_OUT: u32 = T * CHUNKS_OUT / THREADS;
/// Columns of slack each side of a tile row, where a chunk's floats outside the tile land.
const SLACK: u32 = 4;

shared_memory! {
    /// 67 input rows of 64 floats with 4 columns of slack each side, padded to 73 floats a row.
    pub struct Tile {
        pub tile: SharedMatrix<f32> = MatrixLayout::padded(ROWS_IN, T + 2 * SLACK),
    }
}

/// Where input chunk `k` of tile row `s` goes, its row starting `delta` floats past a boundary:
/// its first float is tile column 4k - δ, stored at 4k - δ + SLACK.
#[inline(always)]
fn stage(tile: SharedMatrix<f32>, s: u32, k: u32, delta: u32, chunk: Float4) {
    for e in 0..4 {
        // SAFETY: s < 67, k ≤ 16 and δ ≤ 3: SLACK - 3 ≤ 4k + SLACK - δ + e < 72, inside the row.
        unsafe { tile.set_unchecked(s, 4 * k + SLACK - delta + e, chunk.0[e as usize]) };
    }
}

/// The output chunk of tile column `c` from tile row `s` down.
#[inline(always)]
fn column_chunk(tile: SharedMatrix<f32>, s: u32, c: u32) -> Float4 {
    // SAFETY: s + 3 ≤ 66 and c < 64 (the callers' chunks lie inside the staged rows).
    Float4(core::array::from_fn(|e| unsafe { tile.get_unchecked(s + e as u32, c + SLACK) }))
}

/// Interior blocks: every staged row exists, every chunk lies inside both arrays.
///
/// # Safety
/// The block's 67 rows lie inside the input, whose last float read, `(band + 63) · cols + tile_col
/// + 67`, is below rows × cols; `band + 64 ≤ rows`; the block is [`THREADS`] threads.
#[inline(always)]
unsafe fn interior(tile: SharedMatrix<f32>, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y * T, block_idx().x * T);
    // Every chunk is loaded before any is staged, so that a thread's five loads are in flight
    // together. Only the last pass has threads past the 67 rows (the others' test is left out, so
    // that their loads are not behind a branch).
    let staged = |pass: u32, s: u32| pass + 1 < PASSES_IN || s < ROWS_IN;
    let mut chunks = [Float4([0.0; 4]); PASSES_IN as usize];
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        if staged(pass, s) {
            let a = (band - SKEW + s) * cols + tile_col;
            // SAFETY: a 16-byte aligned chunk inside the input (the caller's promise).
            chunks[pass as usize] = unsafe { load4(input.add((a - misalignment(input, a) + 4 * k) as usize)) };
        }
    });
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        if staged(pass, s) {
            let a = (band - SKEW + s) * cols + tile_col;
            stage(tile, s, k, misalignment(input, a), chunks[pass as usize]);
        }
    });
    // The whole tile is staged before any thread reads another thread's floats.
    sync_threads();
    // Every output chunk is read from the tile before any is stored, so that the reads are not
    // behind the stores' tests. A thread past the last output row works on that row, and drops it.
    let mut out = [Float4([0.0; 4]); PASSES_OUT as usize];
    let mut at = [0u32; PASSES_OUT as usize];
    unrolled::<{ PASSES_OUT }>(|pass| {
        let i = t + pass * THREADS;
        let (c, k) = (i / CHUNKS_OUT, i % CHUNKS_OUT);
        // The block's part of output row `tile_col + c` starts ε floats before input row `band`.
        let b = (tile_col + c).min(cols - 1) * rows + band;
        let epsilon = misalignment(output, b);
        at[pass as usize] = b - epsilon + 4 * k;
        out[pass as usize] = column_chunk(tile, SKEW - epsilon + 4 * k, c);
    });
    unrolled::<{ PASSES_OUT }>(|pass| {
        let c = (t + pass * THREADS) / CHUNKS_OUT;
        if tile_col + c < cols {
            // SAFETY: input rows band - ε + 4k .. +3 lie inside the matrix: the chunk is four
            // elements of output row `tile_col + c`, from a 16-byte boundary.
            unsafe { store4(output.add(at[pass as usize] as usize), out[pass as usize]) };
        }
    });
}

/// Blocks at the matrix's edges: the same moves, each row, chunk and float tested.
///
/// # Safety
/// `input` and `output` hold rows × cols elements; the block is [`THREADS`] threads.
#[inline(always)]
unsafe fn edge(tile: SharedMatrix<f32>, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y as i64 * T as i64, block_idx().x * T);
    let len = rows as i64 * cols as i64;
    let row_exists = |j: i64| (0..rows as i64).contains(&j);
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        let j = band - SKEW as i64 + s as i64;
        if s >= ROWS_IN || !row_exists(j) {
            return;
        }
        let a = j * cols as i64 + tile_col as i64;
        let delta = misalignment(input, a as u32);
        let start = a - delta as i64 + 4 * k as i64;
        let chunk = if start >= 0 && start + 4 <= len {
            // SAFETY: a 16-byte aligned chunk inside the input.
            unsafe { load4(input.add(start as usize)) }
        } else {
            // Floats outside the tile are staged but never read.
            Float4(core::array::from_fn(|e| {
                let at = start + e as i64;
                // SAFETY: an element inside the input.
                if (0..len).contains(&at) { unsafe { *input.add(at as usize) } } else { 0.0 }
            }))
        };
        stage(tile, s, k, delta, chunk);
    });
    // As in `interior`.
    sync_threads();
    unrolled::<{ PASSES_OUT }>(|pass| {
        let i = t + pass * THREADS;
        let (c, k) = (i / CHUNKS_OUT, i % CHUNKS_OUT);
        let out_row = tile_col + c;
        if out_row >= cols {
            return;
        }
        let b = out_row as i64 * rows as i64 + band;
        let epsilon = misalignment(output, b as u32);
        // Input rows j0 .. j0 + 3, tile rows s .. s + 3, output elements start .. start + 3.
        let j0 = band - epsilon as i64 + 4 * k as i64;
        let (s, start) = (SKEW - epsilon + 4 * k, b - epsilon as i64 + 4 * k as i64);
        if row_exists(j0) && row_exists(j0 + 3) {
            // SAFETY: four elements of output row `out_row`, from a 16-byte boundary.
            unsafe { store4(output.add(start as usize), column_chunk(tile, s, c)) };
        } else {
            for e in 0..4 {
                if row_exists(j0 + e as i64) {
                    // SAFETY: an element of the output; tile row s + e < 67 was staged (its input
                    // row exists), column c < 64.
                    unsafe {
                        global_store(output.add((start + e as i64) as usize), tile.get_unchecked(s + e, c + SLACK))
                    };
                }
            }
        }
    });
}

kernel! {
    /// Output rows tile_col .. +63, each from the 16-byte boundary at or below input row
    /// `band` = 64·by; input rows band - 3 .. band + 63 staged.
    pub unsafe fn transpose_skewed(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile { tile } = Tile::carve();
        let (band, tile_col) = (block_idx().y * T, block_idx().x * T);
        let last_read = (band as u64 + T as u64 - 1) * cols as u64 + tile_col as u64 + 4 * CHUNKS_IN as u64;
        let inner = band >= SKEW && band as u64 + T as u64 <= rows as u64 && last_read <= rows as u64 * cols as u64;
        // SAFETY: forwarded from the kernel's contract, with `interior`'s bounds checked just
        // above; the choice is the same for every thread of the block.
        unsafe {
            if inner {
                interior(tile, input, output, rows, cols)
            } else {
                edge(tile, input, output, rows, cols)
            }
        }
    }
}

/// 256 threads per 64 output rows × 64 input rows, and one more band of blocks for the rows that
/// the last band's skew leaves.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_skewed,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(T), ((p.rows as u64 + SKEW as u64).div_ceil(T as u64)) as u32),
    bounds: LaunchBounds::NONE,
};
