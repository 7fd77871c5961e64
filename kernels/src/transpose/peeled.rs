//! Peeled transpose: the 64×64 padded tile with 16-byte global accesses on any shape. Where rows
//! and cols are not multiples of 4, each row of the input (and of the output) starts at its own
//! offset from a 16-byte boundary, and the vectorised kernel falls back to one float at a time
//! (measured at 8191×4097: docs/perf-log.md, change 39). Here each tile row is read as the
//! 16-byte aligned chunks that cover it, 17 instead of 16, the floats outside the tile dropped;
//! each output row is written as aligned chunks too, the two at its ends, which the neighbouring
//! tiles share, one float at a time (the loop's peeled head and tail).
//!
//! Alignment is that of the addresses themselves, so any base address works; a chunk that would
//! reach outside the array (before its first or past its last element) is read one float at a time.

use super::{Transpose, grid, misalignment};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, load4, sync_threads, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 256;
/// Tile side.
const T: u32 = 64;
/// Aligned 16-byte chunks covering 64 floats at any offset.
const CHUNKS: u32 = T / 4 + 1;
/// Chunks per tile, each way.
const ITEMS: u32 = T * CHUNKS;
/// A thread's chunks, each way (the last pass covers 64 of 256).
const PASSES: u32 = ITEMS.div_ceil(THREADS);

/// Columns of slack each side of a tile row: a chunk's floats outside the tile land there, so that
/// a whole chunk is stored without a test per float (with tests, LLVM split its 16-byte load).
const SLACK: u32 = 4;

shared_memory! {
    /// One 64×64 tile with 4 columns of slack each side, padded to 73 floats a row (odd: a column
    /// read touches 32 banks).
    pub struct Tile {
        pub tile: SharedMatrix<f32> = MatrixLayout::padded(T, T + 2 * SLACK),
    }
}

kernel! {
    /// Input tile (by·64, bx·64) to output tile (bx·64, by·64): thread t moves chunk i = t + 256p
    /// of the tile (row i / 17, chunk i % 17) each way.
    pub unsafe fn transpose_peeled(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile { tile } = Tile::carve();
        let t = thread_idx().x;
        let (tile_row, tile_col) = (block_idx().y * T, block_idx().x * T);
        let len = rows as u64 * cols as u64;
        // Every chunk of the thread is loaded before any is stored, so that its five loads are in
        // flight together (stored as each arrived, they went one at a time).
        let mut chunks = [Float4([0.0; 4]); PASSES as usize];
        unrolled::<{ PASSES }>(|pass| {
            let i = t + pass * THREADS;
            let (r, k) = (i / CHUNKS, i % CHUNKS);
            let row = tile_row + r;
            if i >= ITEMS || row >= rows {
                return;
            }
            // Tile column c of this row is input element a + c; chunk k holds tile columns
            // 4k - δ .. 4k - δ + 3.
            let a = row * cols + tile_col;
            let delta = misalignment(input.as_ptr(), a);
            let first = (4 * k) as i32 - delta as i32;
            let whole = a as u64 + (4 * k) as u64 >= delta as u64 && a as u64 + (4 * k + 4) as u64 <= len + delta as u64;
            chunks[pass as usize] = if whole {
                // SAFETY: the chunk lies inside the input (checked above) and is 16-byte aligned.
                // Through the raw pointer, stepping back by δ before stepping on: the same chunk
                // as an index into the view gave ptxas other code for this loop.
                unsafe { load4(input.as_ptr().wrapping_add(a as usize).wrapping_sub(delta as usize).add(4 * k as usize)) }
            } else {
                // Only the tile columns whose input the output needs (the rest are never read).
                Float4(core::array::from_fn(|e| {
                    let c = first + e as i32;
                    if (0..T as i32).contains(&c) && tile_col + (c as u32) < cols {
                        // SAFETY: an element of an input row inside the matrix.
                        unsafe { input.get_unchecked(a + c as u32) }
                    } else {
                        0.0
                    }
                }))
            };
        });
        unrolled::<{ PASSES }>(|pass| {
            let i = t + pass * THREADS;
            let (r, k) = (i / CHUNKS, i % CHUNKS);
            if i >= ITEMS || tile_row + r >= rows {
                return;
            }
            let first = (4 * k) as i32 - misalignment(input.as_ptr(), (tile_row + r) * cols + tile_col) as i32;
            for e in 0..4 {
                // SAFETY: r < 64 and -3 ≤ c < 67: column c + SLACK lies inside the row. (Chunks
                // of a row cover disjoint columns.)
                unsafe { tile.set_unchecked(r, (first + e + SLACK as i32) as u32, chunks[pass as usize].0[e as usize]) };
            }
        });
        // The whole tile is staged before any thread reads another thread's floats.
        sync_threads();
        unrolled::<{ PASSES }>(|pass| {
            let i = t + pass * THREADS;
            let (c, k) = (i / CHUNKS, i % CHUNKS);
            let out_row = tile_col + c;
            if i >= ITEMS || out_row >= cols {
                return;
            }
            // Output row `out_row` (input column) holds tile rows r at b + r; chunk k holds
            // r = 4k - ε .. 4k - ε + 3.
            let b = out_row * rows + tile_row;
            let epsilon = misalignment(output.as_mut_ptr(), b);
            let first = (4 * k) as i32 - epsilon as i32;
            let inside = |r: i32| (0..T as i32).contains(&r) && tile_row + (r as u32) < rows;
            if inside(first) && inside(first + 3) {
                // SAFETY: four tile rows r < 64, column c < 64.
                let four = Float4(core::array::from_fn(|e| unsafe { tile.get_unchecked((first + e as i32) as u32, c + SLACK) }));
                // SAFETY: four elements of output row `out_row`, from a 16-byte boundary.
                unsafe { output.set4_unchecked(b + first as u32, four) };
            } else {
                for e in 0..4 {
                    let r = first + e;
                    if inside(r) {
                        // SAFETY: an element of the output inside the tile; r, c < 64.
                        unsafe { output.set_unchecked(b + r as u32, tile.get_unchecked(r as u32, c + SLACK)) };
                    }
                }
            }
        });
    }
}

/// 256 threads per 64×64 tile, 17 aligned chunks per tile row and per output row.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_peeled,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p, _| grid(p, T),
};
