//! Vectorised transpose: the padded tile, grown to 64×64 (or kept at 32×32), with 16-byte global
//! loads and stores where the shape allows and 4 or 16 elements per thread, so that each SM keeps
//! more bytes in flight. Two tile sizes are registered; the host picks one for the device
//! (`host info` says which and why), and the benches measure both.
//!
//! The 16-byte path needs rows and cols multiples of 4 and 16-byte aligned arrays (an input row,
//! and an output row, then start on a 16-byte boundary); any other shape takes the scalar path,
//! the same tile read one float at a time. The choice is uniform over the launch, so every thread
//! reaches the same barrier.

use super::{Transpose, grid};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, is_aligned4, sync_threads, thread_idx,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads per block, for either tile size.
pub const THREADS: u32 = 256;

shared_memory! {
    /// One 32×32 tile, padded to 33 floats a row.
    pub struct Tile32 {
        pub tile: SharedMatrix<f32> = MatrixLayout::padded(32, 32),
    }
}

shared_memory! {
    /// One 64×64 tile, padded to 65 floats a row.
    pub struct Tile64 {
        pub tile: SharedMatrix<f32> = MatrixLayout::padded(64, 64),
    }
}

/// Moves one `T × T` tile of the input at (by·T, bx·T) through `tile` into the output.
///
/// 16-byte path: linear thread `t` loads float4 `i = t + 256p` of the tile (row `i / (T/4)`,
/// columns `4·(i % (T/4))`..+3) and stores its four floats into the padded tile; after the barrier
/// it builds output float4 `i` (output row `i / (T/4)`, an input column; four output columns, input
/// rows) from a column of the tile. On the padded tile a warp's accesses hit each bank at most
/// twice. Scalar path: element `i = t + 256p` is (row `i / T`, column `i % T`), both ways.
///
/// # Safety
/// `input` and `output` hold rows × cols elements; the block is [`THREADS`] threads; `tile` is
/// T × T.
#[inline(always)]
unsafe fn tile_body<const T: u32>(
    tile: SharedMatrix<f32>,
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let (tile_row, tile_col) = (block_idx().y * T, block_idx().x * T);
    let vector = rows.is_multiple_of(4)
        && cols.is_multiple_of(4)
        && is_aligned4(input.as_ptr())
        && is_aligned4(output.as_mut_ptr());
    if vector {
        let per_row = T / 4;
        for pass in 0..T * per_row / THREADS {
            let i = t + pass * THREADS;
            let (r, c) = (i / per_row, 4 * (i % per_row));
            let (row, col) = (tile_row + r, tile_col + c);
            // cols is a multiple of 4: a float4 is wholly inside the row or wholly past it.
            if row < rows && col < cols {
                // SAFETY: 16-byte aligned (checked above) and inside the input; r < T and c + 3 < T.
                unsafe {
                    let value = input.get4_unchecked(row * cols + col);
                    for k in 0..4 {
                        tile.set_unchecked(r, c + k, value.0[k as usize]);
                    }
                }
            }
        }
        // The whole tile is staged before any thread reads another thread's floats.
        sync_threads();
        for pass in 0..T * per_row / THREADS {
            let i = t + pass * THREADS;
            let (c, r) = (i / per_row, 4 * (i % per_row));
            let (row, col) = (tile_row + r, tile_col + c);
            if row < rows && col < cols {
                // SAFETY: as above; output row `col` of cols, output columns row..row+3 of rows.
                unsafe {
                    let value = Float4(core::array::from_fn(|k| tile.get_unchecked(r + k as u32, c)));
                    output.set4_unchecked(col * rows + row, value);
                }
            }
        }
    } else {
        for pass in 0..T * T / THREADS {
            let i = t + pass * THREADS;
            let (r, c) = (i / T, i % T);
            let (row, col) = (tile_row + r, tile_col + c);
            if row < rows && col < cols {
                // SAFETY: inside the input; r, c < T.
                unsafe { tile.set_unchecked(r, c, input.get_unchecked(row * cols + col)) };
            }
        }
        // As above.
        sync_threads();
        for pass in 0..T * T / THREADS {
            let i = t + pass * THREADS;
            let (c, r) = (i / T, i % T);
            let (row, col) = (tile_row + r, tile_col + c);
            if row < rows && col < cols {
                // SAFETY: inside the output; r, c < T.
                unsafe { output.set_unchecked(col * rows + row, tile.get_unchecked(r, c)) };
            }
        }
    }
}

kernel! {
    /// 32×32 tiles, one float4 (or four floats) per thread each way.
    pub unsafe fn transpose_vectorized_t32(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile32 { tile } = Tile32::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_32 launches THREADS threads.
        unsafe { tile_body::<32>(tile, input, output, rows, cols) }
    }
}

kernel! {
    /// 64×64 tiles, four float4 (or sixteen floats) per thread each way.
    pub unsafe fn transpose_vectorized_t64(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile64 { tile } = Tile64::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_64 launches THREADS threads.
        unsafe { tile_body::<64>(tile, input, output, rows, cols) }
    }
}

/// 256 threads per 32×32 tile: 4.1 KiB of shared memory, many blocks per SM.
pub const KERNEL_32: Kernel<Transpose> = Kernel {
    code: transpose_vectorized_t32,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile32::BYTES),
    grid: |p, _| grid(p, 32),
};

/// 256 threads per 64×64 tile: 16.3 KiB of shared memory, more work per thread.
pub const KERNEL_64: Kernel<Transpose> = Kernel {
    code: transpose_vectorized_t64,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile64::BYTES),
    grid: |p, _| grid(p, 64),
};
