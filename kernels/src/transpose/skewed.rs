//! Skewed transpose: the peeled tile, with each block owning whole aligned chunks of its output.
//!
//! In [`super::peeled`] a block writes output row `o` from tile row 0, which starts wherever
//! `o · rows` falls: the chunks at both ends are shared with the neighbouring blocks and written one
//! float at a time, so that at 8191×4097 every warp runs a scalar path beside its 16-byte one
//! (measured: docs/perf-log.md, change 84). Here the block's part of output row `o` starts at the
//! 16-byte boundary at or below its first element, up to 3 input rows earlier; the next block's
//! part starts 64 rows later, at a boundary too. So every block writes 16 whole aligned chunks per
//! output row, and stages 67 input rows (its 64 and the 3 before), each as the 17 aligned chunks
//! that cover it, each chunk one 16-byte store where it lay in memory. Only the blocks at the
//! matrix's edges test each element; the others run straight through (one test per block,
//! uniform, so every thread reaches the barrier).
//!
//! At 8191×4097, 4097×8191 and 12345×6789 this runs ahead of the tiled and peeled kernels; `ncu`
//! finds the L2 near its peak, its sectors above an aligned shape's (measured: docs/perf-log.md,
//! change 84 and "the transposes as committed").

use super::{Transpose, misalignment};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 256;
/// Input columns (output rows) a block covers, and input rows it owns.
const T: u32 = 64;
/// Input rows a block stages before its own: the most an output row's part starts early.
const BEFORE: u32 = 3;
/// Input rows staged per block.
const ROWS_IN: u32 = T + BEFORE;
/// Aligned 16-byte chunks covering 64 input floats at any offset.
const CHUNKS_IN: u32 = T / 4 + 1;
/// A thread's input chunks (the last pass covers 115 of 256).
const PASSES_IN: u32 = (ROWS_IN * CHUNKS_IN).div_ceil(THREADS);
/// Aligned chunks of a block's part of an output row.
const CHUNKS_OUT: u32 = T / 4;
/// A thread's output chunks.
const PASSES_OUT: u32 = T * CHUNKS_OUT / THREADS;
/// Floats of a staged row: its 17 chunks where they lay in memory. Tile column c of row s is then
/// at c + δ(s), δ(s) the row's offset past a 16-byte boundary.
const ROW: u32 = 4 * CHUNKS_IN;

shared_memory! {
    /// The 67 staged rows, four to a line of the matrix (row s at line s / 4, from column
    /// 68 · (s % 4)), each line padded by one chunk. A warp reads a tile column every fourth row:
    /// with the pad those rows lie 20 banks apart, on 8 of the bank quads instead of 2; the pad is
    /// a whole chunk, so that every staged chunk stays 16-byte aligned.
    pub struct Tile {
        pub tile: SharedMatrix<f32> = MatrixLayout { rows: ROWS_IN.div_ceil(4), cols: 4 * ROW, pitch: 4 * ROW + 4 },
    }
}

/// Stages input chunk `k` of tile row `s` where it lay in memory.
#[inline(always)]
fn stage(tile: SharedMatrix<f32>, s: u32, k: u32, chunk: Float4) {
    // SAFETY: s < 67 and k ≤ 16: line s / 4 < 17, columns 68 · (s % 4) + 4k .. +3 < 272; both
    // multiples of 4, as is the pitch.
    unsafe { tile.set4_unchecked(s / 4, (s % 4) * ROW + 4 * k, chunk) };
}

/// Tile element (s, c), its row staged `delta` floats past a boundary.
#[inline(always)]
fn element(tile: SharedMatrix<f32>, s: u32, c: u32, delta: u32) -> f32 {
    // SAFETY: s < 67 and c + δ ≤ 66 < 68.
    unsafe { tile.get_unchecked(s / 4, (s % 4) * ROW + c + delta) }
}

/// The output chunk of tile column `c` from tile row `s` down; `shift(s)` is row s's δ.
#[inline(always)]
fn column_chunk(tile: SharedMatrix<f32>, s: u32, c: u32, shift: impl Fn(u32) -> u32) -> Float4 {
    Float4(core::array::from_fn(|e| {
        element(tile, s + e as u32, c, shift(s + e as u32))
    }))
}

/// Output item `i` of the block: tile column `c` (output row), chunk `k` of its part. Lanes 0–15
/// of a warp take the 16 chunks of one output row, lanes 16–31 those of the next.
///
/// For every i < 1024 this is (i / 16, i % 16); written this way (the form of the earlier
/// tile-generic kernel), ptxas issues the first two input loads about 20 instructions into
/// `interior` instead of all five after every address, and the kernel runs faster at 8191×4097,
/// 4097×8191 and 12345×6789, slightly slower at 8192×4096 (measured: docs/perf-log.md, change 99).
#[inline(always)]
fn output_item(i: u32) -> (u32, u32) {
    (
        (i / CHUNKS_OUT) % T,
        CHUNKS_OUT * (i / (CHUNKS_OUT * T)) + i % CHUNKS_OUT,
    )
}

/// Whether the block runs [`interior`]: all its staged rows exist, and every chunk it reads or
/// writes lies inside the arrays.
#[inline(always)]
fn is_interior(rows: u32, cols: u32) -> bool {
    let (band, tile_col) = (block_idx().y * T, block_idx().x * T);
    let last_read = (band as u64 + T as u64 - 1) * cols as u64 + tile_col as u64 + ROW as u64;
    band >= BEFORE && band as u64 + T as u64 <= rows as u64 && last_read <= rows as u64 * cols as u64
}

/// Interior blocks: every staged row exists, every chunk lies inside both arrays.
///
/// # Safety
/// [`is_interior`] holds; the block is [`THREADS`] threads.
#[inline(always)]
unsafe fn interior(
    tile: SharedMatrix<f32>,
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y * T, block_idx().x * T);
    // Every chunk is loaded before any is staged, so that a thread's five loads are in flight
    // together. Only the last pass has threads past the 67 rows (the others' test is left out,
    // so that their loads are not behind a branch).
    let staged = |pass: u32, s: u32| pass + 1 < PASSES_IN || s < ROWS_IN;
    // Tile row s is input row band - 3 + s; its tile column 0 is input element `first_float(s)`.
    let first_float = |s: u32| (band - BEFORE + s) * cols + tile_col;
    let mut chunks = [Float4([0.0; 4]); PASSES_IN as usize];
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        if staged(pass, s) {
            let a = first_float(s);
            // SAFETY: a 16-byte aligned chunk inside the input (the caller's promise).
            chunks[pass as usize] = unsafe { input.get4_unchecked(a - misalignment(input.as_ptr(), a) + 4 * k) };
        }
    });
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        if staged(pass, s) {
            stage(tile, s, k, chunks[pass as usize]);
        }
    });
    // The whole tile is staged before any thread reads another thread's floats.
    sync_threads();
    // Every output chunk is read from the tile before any is stored, so that the reads are not
    // behind the stores' tests. A thread past the last output row works on that row, and drops it.
    let mut out = [Float4([0.0; 4]); PASSES_OUT as usize];
    let mut at = [0u32; PASSES_OUT as usize];
    unrolled::<{ PASSES_OUT }>(|pass| {
        let (c, k) = output_item(t + pass * THREADS);
        // The block's part of output row `tile_col + c` starts ε floats before input row `band`.
        let b = (tile_col + c).min(cols - 1) * rows + band;
        let epsilon = misalignment(output.as_mut_ptr(), b);
        at[pass as usize] = b - epsilon + 4 * k;
        out[pass as usize] = column_chunk(tile, BEFORE - epsilon + 4 * k, c, |s| {
            misalignment(input.as_ptr(), first_float(s))
        });
    });
    unrolled::<{ PASSES_OUT }>(|pass| {
        let (c, _) = output_item(t + pass * THREADS);
        if tile_col + c < cols {
            // SAFETY: input rows band - ε + 4k .. +3 lie inside the matrix: the chunk is four
            // elements of output row `tile_col + c`, from a 16-byte boundary.
            unsafe { output.set4_unchecked(at[pass as usize], out[pass as usize]) };
        }
    });
}

/// Blocks at the matrix's edges: the same moves, each row, chunk and float tested.
///
/// # Safety
/// `input` and `output` hold rows × cols elements; the block is [`THREADS`] threads.
#[inline(always)]
unsafe fn edge(tile: SharedMatrix<f32>, input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y as i64 * T as i64, block_idx().x * T);
    let len = rows as i64 * cols as i64;
    let row_exists = |j: i64| (0..rows as i64).contains(&j);
    // As in `interior`, in 64 bits: below zero for the rows above the matrix (never staged).
    let first_float = |s: u32| (band - BEFORE as i64 + s as i64) * cols as i64 + tile_col as i64;
    let shift = |s: u32| misalignment(input.as_ptr(), first_float(s) as u32);
    unrolled::<{ PASSES_IN }>(|pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / CHUNKS_IN, i % CHUNKS_IN);
        if s >= ROWS_IN || !row_exists(band - BEFORE as i64 + s as i64) {
            return;
        }
        let start = first_float(s) - shift(s) as i64 + 4 * k as i64;
        let chunk = if start >= 0 && start + 4 <= len {
            // SAFETY: a 16-byte aligned chunk inside the input.
            unsafe { input.get4_unchecked(start as usize) }
        } else {
            // Floats outside the tile are staged but never read.
            Float4(core::array::from_fn(|e| {
                let at = start + e as i64;
                // SAFETY: an element inside the input.
                if (0..len).contains(&at) {
                    unsafe { input.get_unchecked(at as usize) }
                } else {
                    0.0
                }
            }))
        };
        stage(tile, s, k, chunk);
    });
    // As in `interior`.
    sync_threads();
    unrolled::<{ PASSES_OUT }>(|pass| {
        let (c, k) = output_item(t + pass * THREADS);
        let out_row = tile_col + c;
        if out_row >= cols {
            return;
        }
        let b = out_row as i64 * rows as i64 + band;
        let epsilon = misalignment(output.as_mut_ptr(), b as u32);
        // Input rows j0 .. j0 + 3, tile rows s .. s + 3, output elements start .. start + 3.
        let j0 = band - epsilon as i64 + 4 * k as i64;
        let (s, start) = (BEFORE - epsilon + 4 * k, b - epsilon as i64 + 4 * k as i64);
        if row_exists(j0) && row_exists(j0 + 3) {
            // SAFETY: four elements of output row `out_row`, from a 16-byte boundary.
            unsafe { output.set4_unchecked(start as usize, column_chunk(tile, s, c, shift)) };
        } else {
            for e in 0..4 {
                if row_exists(j0 + e as i64) {
                    // SAFETY: an element of the output; tile row s + e was staged (its input row
                    // exists). The address is taken before the value, as ptxas best schedules it.
                    unsafe { output.at_unchecked((start + e as i64) as usize) }.set(element(
                        tile,
                        s + e,
                        c,
                        shift(s + e),
                    ));
                }
            }
        }
    });
}

kernel! {
    /// Output rows tile_col .. +63, each from the 16-byte boundary at or below input row
    /// `band` = 64·by; input rows band - 3 .. band + 63 staged.
    pub unsafe fn transpose_skewed(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile { tile } = Tile::carve();
        // SAFETY: forwarded from the kernel's contract, `interior`'s bounds checked first; the
        // choice is the same for every thread of the block.
        unsafe {
            if is_interior(rows, cols) {
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
    grid: |p, _| {
        Dim3::xy(
            p.cols.div_ceil(T),
            (p.rows as u64 + BEFORE as u64).div_ceil(T as u64) as u32,
        )
    },
};
