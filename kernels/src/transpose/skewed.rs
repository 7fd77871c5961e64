//! Skewed transpose: the peeled tile, with each block owning whole aligned pieces of its output.
//!
//! In [`super::peeled`] a block writes output row `o` from tile row 0, which starts wherever
//! `o · rows` falls: the chunks at both ends are shared with the neighbouring blocks and written one
//! float at a time, so that at 8191×4097 every warp runs a scalar path beside its 16-byte one (65 %
//! of the copy ceiling, docs/perf-log.md). Here the block's part of output row `o` starts at the
//! boundary (of `ALIGN` floats) at or below its first element, up to `ALIGN - 1` input rows
//! earlier; the next block's part starts `BAND` rows later, at a boundary too. So every block
//! writes whole aligned pieces of each output row, and reads `BAND + ALIGN - 1` input rows as the
//! 17 aligned 16-byte chunks that cover each. Only the blocks at the matrix's edges test each
//! element; the others run straight through (one test per block, uniform, so every thread reaches
//! the barrier).

use super::{Transpose, misalignment};
use crate::device::{
    Float4, MatrixLayout, SharedMatrix, block_idx, global_store, load4, store4, sync_threads, thread_idx, unrolled_to,
};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 256;
/// The most input chunks a thread holds (T = 128, BAND = 64 or T = 64, BAND = 128: 9).
const MOST_PASSES_IN: usize = 9;
/// The most output chunks a thread writes (8).
const MOST_PASSES_OUT: usize = 8;

/// The staged rows of a tile `t` columns wide, four to a line of the matrix (row s at line s / 4,
/// from column (t + 4) · (s % 4)), each line padded by one chunk. A warp reads a tile column every
/// fourth row: with the pad those rows lie 20 banks apart, on 8 of the bank quads instead of 2;
/// the pad is a whole chunk, so that every staged chunk stays 16-byte aligned.
const fn tile_layout(t: u32, rows_in: u32) -> MatrixLayout {
    MatrixLayout {
        rows: rows_in.div_ceil(4),
        cols: 4 * (t + 4),
        pitch: 4 * (t + 4) + 4,
    }
}

shared_memory! {
    /// 67 staged rows of 64 columns (T 64, BAND 64, ALIGN 4).
    pub struct Tile64x67 {
        pub tile: SharedMatrix<f32> = tile_layout(64, 67),
    }
}

shared_memory! {
    /// 67 staged rows of 128 columns (T 128, BAND 64, ALIGN 4).
    pub struct Tile128x67 {
        pub tile: SharedMatrix<f32> = tile_layout(128, 67),
    }
}

shared_memory! {
    /// 131 staged rows of 64 columns (T 64, BAND 128, ALIGN 4).
    pub struct Tile64x131 {
        pub tile: SharedMatrix<f32> = tile_layout(64, 131),
    }
}

/// One skew: blocks cover `T` input columns (output rows) and own `BAND` input rows; output
/// pieces start at multiples of `ALIGN` floats.
struct Skew<const T: u32, const BAND: u32, const RUN: u32>;

impl<const T: u32, const BAND: u32, const RUN: u32> Skew<T, BAND, RUN> {
    /// Aligned 16-byte chunks covering T input floats at any offset.
    const CHUNKS_IN: u32 = T / 4 + 1;
    /// Floats of a staged row: its chunks where they lay in memory, so that each is one 16-byte
    /// store. Tile column c of row s is then at c + δ(s), δ(s) the row's offset past a boundary.
    const ROW: u32 = 4 * Self::CHUNKS_IN;
    /// Input rows a block reads before its own: the most an output row's part starts early.
    const BEFORE: u32 = 3;
    const ROWS_IN: u32 = BAND + Self::BEFORE;
    const PASSES_IN: u32 = (Self::ROWS_IN * Self::CHUNKS_IN).div_ceil(THREADS);
    /// Aligned chunks of a block's part of an output row.
    const CHUNKS_OUT: u32 = BAND / 4;
    const PASSES_OUT: u32 = T * Self::CHUNKS_OUT / THREADS;

    /// Stages input chunk `k` of tile row `s` where it lay in memory.
    #[inline(always)]
    fn stage(tile: SharedMatrix<f32>, s: u32, k: u32, chunk: Float4) {
        // SAFETY: s < the staged rows and k ≤ T / 4: line s / 4 inside the tile, columns
        // ROW · (s % 4) + 4k .. +3 < 4 · ROW; both multiples of 4, as is the pitch.
        unsafe { tile.set4_unchecked(s / 4, (s % 4) * Self::ROW + 4 * k, chunk) };
    }

    /// Tile element (s, c), its row staged `delta` floats past a boundary.
    #[inline(always)]
    fn element(tile: SharedMatrix<f32>, s: u32, c: u32, delta: u32) -> f32 {
        // SAFETY: s < the staged rows and c + δ ≤ T + 2 < ROW.
        unsafe { tile.get_unchecked(s / 4, (s % 4) * Self::ROW + c + delta) }
    }

    /// The output chunk of tile column `c` from tile row `s` down; `shift(s)` is row s's δ.
    #[inline(always)]
    fn column_chunk(tile: SharedMatrix<f32>, s: u32, c: u32, shift: impl Fn(u32) -> u32) -> Float4 {
        Float4(core::array::from_fn(|e| Self::element(tile, s + e as u32, c, shift(s + e as u32))))
    }

    /// Output item `i` of the block: tile column `c` (output row), chunk `k` of its part. A warp
    /// takes RUN chunks of one output row, and 32 / RUN rows.
    #[inline(always)]
    fn output_item(i: u32) -> (u32, u32) {
        ((i / RUN) % T, RUN * (i / (RUN * T)) + i % RUN)
    }

    /// Blocks in y: one more band for the rows that the last band's skew leaves.
    const fn bands(rows: u32) -> u32 {
        ((rows as u64 + Self::BEFORE as u64).div_ceil(BAND as u64)) as u32
    }
}

/// Whether the block runs [`interior`]: all its staged rows exist, and every chunk it reads
/// or writes lies inside the arrays.
#[inline(always)]
fn is_interior<const T: u32, const BAND: u32, const RUN: u32>(rows: u32, cols: u32) -> bool {
    let (band, tile_col) = (block_idx().y * BAND, block_idx().x * T);
    let last_read = (band as u64 + BAND as u64 - 1) * cols as u64 + tile_col as u64 + Skew::<T, BAND, RUN>::ROW as u64;
    band >= Skew::<T, BAND, RUN>::BEFORE
        && band as u64 + BAND as u64 <= rows as u64
        && last_read <= rows as u64 * cols as u64
}

/// Interior blocks: every staged row exists, every chunk lies inside both arrays.
///
/// # Safety
/// [`is_interior`] holds; the block is [`THREADS`] threads; `tile` holds `BAND + ALIGN - 1` rows.
#[inline(always)]
unsafe fn interior<const T: u32, const BAND: u32, const RUN: u32>(
    tile: SharedMatrix<f32>,
    input: *const f32,
    output: *mut f32,
    rows: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y * BAND, block_idx().x * T);
    let before = Skew::<T, BAND, RUN>::BEFORE;
    let (rows_in, passes_in) = (Skew::<T, BAND, RUN>::ROWS_IN, Skew::<T, BAND, RUN>::PASSES_IN);
    // Every chunk is loaded before any is staged, so that a thread's loads are in flight
    // together. Only the last pass has threads past the staged rows (the others' test is left
    // out, so that their loads are not behind a branch).
    let staged = |pass: u32, s: u32| pass + 1 < passes_in || s < rows_in;
    let first_float = |s: u32| (band - before + s) * cols + tile_col;
    let mut chunks = [Float4([0.0; 4]); MOST_PASSES_IN];
    unrolled_to(passes_in, |pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / Skew::<T, BAND, RUN>::CHUNKS_IN, i % Skew::<T, BAND, RUN>::CHUNKS_IN);
        if staged(pass, s) {
            let a = first_float(s);
            // SAFETY: a 16-byte aligned chunk inside the input (the caller's promise).
            chunks[pass as usize] = unsafe { load4(input.add((a - misalignment(input, a) + 4 * k) as usize)) };
        }
    });
    unrolled_to(passes_in, |pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / Skew::<T, BAND, RUN>::CHUNKS_IN, i % Skew::<T, BAND, RUN>::CHUNKS_IN);
        if staged(pass, s) {
            Skew::<T, BAND, RUN>::stage(tile, s, k, chunks[pass as usize]);
        }
    });
    // The whole tile is staged before any thread reads another thread's floats.
    sync_threads();
    // Every output chunk is read from the tile before any is stored, so that the reads are not
    // behind the stores' tests. A thread past the last output row works on that row, and drops it.
    let passes_out = Skew::<T, BAND, RUN>::PASSES_OUT;
    let mut out = [Float4([0.0; 4]); MOST_PASSES_OUT];
    let mut at = [0u32; MOST_PASSES_OUT];
    unrolled_to(passes_out, |pass| {
        let (c, k) = Skew::<T, BAND, RUN>::output_item(t + pass * THREADS);
        // The block's part of output row `tile_col + c` starts ε floats before input row `band`.
        let b = (tile_col + c).min(cols - 1) * rows + band;
        let epsilon = misalignment(output, b);
        at[pass as usize] = b - epsilon + 4 * k;
        out[pass as usize] = Skew::<T, BAND, RUN>::column_chunk(tile, before - epsilon + 4 * k, c, |s| misalignment(input, first_float(s)));
    });
    unrolled_to(passes_out, |pass| {
        let (c, _) = Skew::<T, BAND, RUN>::output_item(t + pass * THREADS);
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
/// `input` and `output` hold rows × cols elements; the block is [`THREADS`] threads; `tile` holds
/// `BAND + ALIGN - 1` rows.
#[inline(always)]
unsafe fn edge<const T: u32, const BAND: u32, const RUN: u32>(
    tile: SharedMatrix<f32>,
    input: *const f32,
    output: *mut f32,
    rows: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let (band, tile_col) = (block_idx().y as i64 * BAND as i64, block_idx().x * T);
    let before = Skew::<T, BAND, RUN>::BEFORE;
    let len = rows as i64 * cols as i64;
    let row_exists = |j: i64| (0..rows as i64).contains(&j);
    // Tile row s is input row band - BEFORE + s; its tile column 0 is input element
    // `first_float(s)` (below zero for the rows above the matrix, which are never staged).
    let first_float = |s: u32| (band - before as i64 + s as i64) * cols as i64 + tile_col as i64;
    let shift = |s: u32| misalignment(input, first_float(s) as u32);
    unrolled_to(Skew::<T, BAND, RUN>::PASSES_IN, |pass| {
        let i = t + pass * THREADS;
        let (s, k) = (i / Skew::<T, BAND, RUN>::CHUNKS_IN, i % Skew::<T, BAND, RUN>::CHUNKS_IN);
        if s >= Skew::<T, BAND, RUN>::ROWS_IN || !row_exists(band - before as i64 + s as i64) {
            return;
        }
        let start = first_float(s) - shift(s) as i64 + 4 * k as i64;
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
        Skew::<T, BAND, RUN>::stage(tile, s, k, chunk);
    });
    // As in `interior`.
    sync_threads();
    unrolled_to(Skew::<T, BAND, RUN>::PASSES_OUT, |pass| {
        let (c, k) = Skew::<T, BAND, RUN>::output_item(t + pass * THREADS);
        let out_row = tile_col + c;
        if out_row >= cols {
            return;
        }
        let b = out_row as i64 * rows as i64 + band;
        let epsilon = misalignment(output, b as u32);
        // Input rows j0 .. j0 + 3, tile rows s .. s + 3, output elements start .. start + 3.
        let j0 = band - epsilon as i64 + 4 * k as i64;
        let (s, start) = (before - epsilon + 4 * k, b - epsilon as i64 + 4 * k as i64);
        if row_exists(j0) && row_exists(j0 + 3) {
            // SAFETY: four elements of output row `out_row`, from a 16-byte boundary.
            unsafe { store4(output.add(start as usize), Skew::<T, BAND, RUN>::column_chunk(tile, s, c, shift)) };
        } else {
            for e in 0..4 {
                if row_exists(j0 + e as i64) {
                    // SAFETY: an element of the output; tile row s + e was staged (its input row
                    // exists).
                    unsafe { global_store(output.add((start + e as i64) as usize), Skew::<T, BAND, RUN>::element(tile, s + e, c, shift(s + e))) };
                }
            }
        }
    });
}

kernel! {
    /// Tiles of 64 columns and 64 rows; each output row's part from its 16-byte boundary (input
    /// rows band - 3 .. band + 63 staged).
    pub unsafe fn transpose_skewed(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile64x67 { tile } = Tile64x67::carve();
        // SAFETY: forwarded from the kernel's contract, `interior`'s bounds checked first; the
        // choice is the same for every thread of the block.
        unsafe {
            if is_interior::<64, 64, 16>(rows, cols) {
                interior::<64, 64, 16>(tile, input, output, rows, cols)
            } else {
                edge::<64, 64, 16>(tile, input, output, rows, cols)
            }
        }
    }
}

kernel! {
    /// `transpose_skewed` held to 32 registers: eight blocks per SM.
    pub unsafe fn transpose_skewed_packed(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile64x67 { tile } = Tile64x67::carve();
        // SAFETY: as in `transpose_skewed`.
        unsafe {
            if is_interior::<64, 64, 16>(rows, cols) {
                interior::<64, 64, 16>(tile, input, output, rows, cols)
            } else {
                edge::<64, 64, 16>(tile, input, output, rows, cols)
            }
        }
    }
}

kernel! {
    /// Tiles of 128 columns and 64 rows.
    pub unsafe fn transpose_skewed_wide(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile128x67 { tile } = Tile128x67::carve();
        // SAFETY: as in `transpose_skewed`.
        unsafe {
            if is_interior::<128, 64, 16>(rows, cols) {
                interior::<128, 64, 16>(tile, input, output, rows, cols)
            } else {
                edge::<128, 64, 16>(tile, input, output, rows, cols)
            }
        }
    }
}

kernel! {
    /// Tiles of 64 columns and 128 rows, a warp writing 32 chunks of one output row.
    pub unsafe fn transpose_skewed_tall_rows(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile64x131 { tile } = Tile64x131::carve();
        // SAFETY: as in `transpose_skewed`.
        unsafe {
            if is_interior::<64, 128, 32>(rows, cols) {
                interior::<64, 128, 32>(tile, input, output, rows, cols)
            } else {
                edge::<64, 128, 32>(tile, input, output, rows, cols)
            }
        }
    }
}

kernel! {
    /// Tiles of 64 columns and 128 rows.
    pub unsafe fn transpose_skewed_tall(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Tile64x131 { tile } = Tile64x131::carve();
        // SAFETY: as in `transpose_skewed`.
        unsafe {
            if is_interior::<64, 128, 16>(rows, cols) {
                interior::<64, 128, 16>(tile, input, output, rows, cols)
            } else {
                edge::<64, 128, 16>(tile, input, output, rows, cols)
            }
        }
    }
}

/// 256 threads per 64 output rows × 64 input rows, and one more band of blocks.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_skewed,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile64x67::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(64), Skew::<64, 64, 16>::bands(p.rows)),
    bounds: LaunchBounds::NONE,
};

/// As [`KERNEL`], eight blocks per SM.
pub const KERNEL_PACKED: Kernel<Transpose> = Kernel {
    code: transpose_skewed_packed,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile64x67::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(64), Skew::<64, 64, 16>::bands(p.rows)),
    bounds: LaunchBounds::min_blocks_per_sm(8),
};

/// 256 threads per 128 output rows × 64 input rows, six blocks per SM.
pub const KERNEL_WIDE: Kernel<Transpose> = Kernel {
    code: transpose_skewed_wide,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile128x67::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(128), Skew::<128, 64, 16>::bands(p.rows)),
    bounds: LaunchBounds::min_blocks_per_sm(6),
};

/// 256 threads per 64 output rows × 128 input rows.
pub const KERNEL_TALL: Kernel<Transpose> = Kernel {
    code: transpose_skewed_tall,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile64x131::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(64), Skew::<64, 128, 16>::bands(p.rows)),
    bounds: LaunchBounds::min_blocks_per_sm(6),
};

/// As [`KERNEL_TALL`], a warp writing 512 bytes of one output row.
pub const KERNEL_TALL_ROWS: Kernel<Transpose> = Kernel {
    code: transpose_skewed_tall_rows,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile64x131::BYTES),
    grid: |p| Dim3::xy(p.cols.div_ceil(64), Skew::<64, 128, 32>::bands(p.rows)),
    bounds: LaunchBounds::min_blocks_per_sm(6),
};
