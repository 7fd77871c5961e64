//! Rung 6: rows past a 1024-thread block's registers, read once: the first [`REGISTER_COLS`]
//! columns in registers as in [`super::wide`] (six vectors a thread), the next [`STAGED_COLS`]
//! in shared memory, which
//! `cp.async` fills while the register loads are in flight. Each thread stages its own columns and
//! reads back only those (after waiting for its own copies), so the staged part needs no barrier of
//! its own: the shared memory is more room per thread, not a tile the block shares. Rows up to
//! [`MAX_COLS`] (GPT-2's 50257-word vocabulary among them) are read once and written once, where
//! the wide rung reads rows past 32768 columns twice; longer rows are read twice, as there.
//!
//! The statistics are the register rung's: each thread's maximum over both parts, the block's,
//! then e^(x − maximum) in place (registers and shared memory) and the block's sum of those, one
//! reciprocal per row.

use super::online::online_row;
use super::registers::row_in_registers;
use super::wide::THREADS;
use super::{Softmax, block_max, block_sum, grid, row_views};
use core::cell::Cell;
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit,
    async_copy_wait, block_idx, exp, is_aligned4, thread_idx,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Warps per block.
const WARPS: u32 = THREADS / WARP_SIZE;
/// 16-byte vectors each thread holds in registers: two fewer than the wide rung's eight, which
/// left no room under 64 registers for the staged part's addresses (seven spilled on sm_80).
pub const VECTORS: u32 = 6;
/// Columns held in registers.
pub const REGISTER_COLS: u32 = THREADS * 4 * VECTORS;
/// Columns each thread stages in shared memory.
pub const STAGED_SLOTS: u32 = 40;
/// Columns staged in shared memory, after the registers': 160 KiB, within an sm_80 block's
/// 163 KiB as well as Hopper's 227.
pub const STAGED_COLS: u32 = THREADS * STAGED_SLOTS;
/// The longest row read once.
pub const MAX_COLS: u32 = REGISTER_COLS + STAGED_COLS;
/// 16-byte vectors each thread stages on the vector path.
const STAGED_VECTORS: u32 = STAGED_SLOTS / 4;

shared_memory! {
    /// The staged columns (`STAGED_SLOTS` rows of one column per thread), then one maximum and
    /// one sum per warp.
    pub struct Staged {
        pub staged: SharedMatrix<f32> = MatrixLayout { rows: STAGED_SLOTS, cols: THREADS, pitch: THREADS },
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
    }
}

/// Where thread `t`'s staged slot `s` sits and which column of the staged part (from
/// [`REGISTER_COLS`]) it holds: on the vector path slot `s` is lane `s % 4` of the thread's
/// vector `s / 4`, vectors a block apart (so a warp's copies are 512 contiguous bytes); on the
/// scalar path slots are a block apart.
#[inline(always)]
fn slot<const VECTOR: bool>(t: u32, s: u32) -> (u32, u32, u32) {
    if VECTOR {
        let (i, lane) = (s / 4, s % 4);
        let element = 4 * (t + THREADS * i);
        (element / THREADS, element % THREADS + lane, element + lane)
    } else {
        (s, t, t + THREADS * s)
    }
}

/// `m` and this thread's staged values, the larger (NaN left out, as the register part's
/// maximum leaves it).
///
/// # Safety
/// This thread's copies have been waited for; `rest` is the staged part's length.
#[inline(always)]
unsafe fn staged_max<const VECTOR: bool>(staged: SharedMatrix<f32>, rest: u32, m: f32) -> f32 {
    let t = thread_idx().x;
    let mut m = m;
    for s in 0..STAGED_SLOTS {
        let (row, col, column) = slot::<VECTOR>(t, s);
        if column < rest {
            // SAFETY: this thread's own slot, inside the matrix.
            let x = unsafe { staged.get_unchecked(row, col) };
            m = if x > m { x } else { m };
        }
    }
    m
}

/// e^(x − m) in place of each of this thread's staged values, and their sum.
///
/// # Safety
/// As for [`staged_max`].
#[inline(always)]
unsafe fn staged_exponentials<const VECTOR: bool>(staged: SharedMatrix<f32>, rest: u32, m: f32) -> f32 {
    let t = thread_idx().x;
    let mut sum = 0.0f32;
    for s in 0..STAGED_SLOTS {
        let (row, col, column) = slot::<VECTOR>(t, s);
        if column < rest {
            // SAFETY: this thread's own slot, inside the matrix.
            let e = unsafe { exp(staged.get_unchecked(row, col) - m) };
            // SAFETY: as above.
            unsafe { staged.set_unchecked(row, col, e) };
            sum += e;
        }
    }
    sum
}

/// The softmax of one row of `cols` columns, `REGISTER_COLS < cols ≤ MAX_COLS`, by 16-byte
/// vectors (`VECTOR`) or single elements in its staged part.
///
/// # Safety
/// `src` and `dst` hold `cols` elements; with `VECTOR` both are 16-byte aligned and `cols` is a
/// multiple of 4; the block has [`THREADS`] threads, all calling.
#[inline(always)]
unsafe fn staged_row<const VECTOR: bool>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    cols: u32,
    (staged, maxes, sums): (SharedMatrix<f32>, SharedSlice<f32>, SharedSlice<f32>),
) {
    let t = thread_idx().x;
    let rest = cols - REGISTER_COLS;
    let (src_rest, dst_rest) = (src.tail(REGISTER_COLS), dst.tail(REGISTER_COLS));
    // The staged part's copies first, so that they travel beside the register loads.
    if VECTOR {
        for i in 0..STAGED_VECTORS {
            let (row, col, column) = slot::<true>(t, 4 * i);
            if column < rest {
                // SAFETY: the vector's four columns are inside the row (rest is a multiple of 4),
                // 16-byte aligned; the destination inside the staged matrix, 16-byte aligned.
                unsafe { staged.copy4_async_unchecked(row, col, src_rest.as_ptr().add(column as usize)) };
            }
        }
    } else {
        for s in 0..STAGED_SLOTS {
            let (row, col, column) = slot::<false>(t, s);
            let inside = column < rest;
            let from = if inside { column } else { 0 };
            // SAFETY: where inside, the column is in the row; the destination in the matrix.
            unsafe { staged.copy1_async_zero_fill_unchecked(row, col, src_rest.as_ptr().add(from as usize), inside) };
        }
    }
    async_copy_commit();
    let row_max = Cell::new(0.0f32);
    let row_sum = Cell::new(0.0f32);
    // SAFETY: the first REGISTER_COLS columns of the row; both reductions called by every thread
    // once (their closures add the staged part, each thread reading only its own copies).
    unsafe {
        row_in_registers::<VECTORS>(
            (src.head(REGISTER_COLS), dst.head(REGISTER_COLS)),
            REGISTER_COLS,
            (t, THREADS),
            #[inline(always)]
            |m| {
                async_copy_wait::<0>();
                let m = block_max::<WARPS>(maxes, staged_max::<VECTOR>(staged, rest, m));
                row_max.set(m);
                m
            },
            #[inline(always)]
            |sum| {
                let sum = block_sum::<WARPS>(sums, sum + staged_exponentials::<VECTOR>(staged, rest, row_max.get()));
                row_sum.set(sum);
                sum
            },
        )
    };
    // The register rung's factor, computed the same way.
    let scale = 1.0 / row_sum.get();
    if VECTOR {
        for i in 0..STAGED_VECTORS {
            let (row, col, column) = slot::<true>(t, 4 * i);
            if column < rest {
                // SAFETY: this thread's own staged vector; the row's columns as for the copy.
                unsafe {
                    let Float4(e) = staged.get4_unchecked(row, col);
                    dst_rest.set4_unchecked(column as usize, Float4(e.map(|e| e * scale)));
                }
            }
        }
    } else {
        for s in 0..STAGED_SLOTS {
            let (row, col, column) = slot::<false>(t, s);
            if column < rest {
                // SAFETY: this thread's own staged element; the column inside the row.
                unsafe { dst_rest.set_unchecked(column as usize, staged.get_unchecked(row, col) * scale) };
            }
        }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// Block r: the softmax of row r, 1024 threads, the columns past their registers in shared
    /// memory.
    pub unsafe fn softmax_wide_staged(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Staged { staged, maxes, sums } = Staged::carve();
        let row = block_idx().x;
        let base = row as usize * cols as usize;
        let views = row_views((input, output), base, cols);
        if cols <= REGISTER_COLS {
            // SAFETY: the row is inside the matrix; every thread calls both reductions.
            unsafe {
                row_in_registers::<VECTORS>(
                    views,
                    cols,
                    (thread_idx().x, THREADS),
                    |m| block_max::<WARPS>(maxes, m),
                    |s| block_sum::<WARPS>(sums, s),
                )
            };
        } else if cols <= MAX_COLS {
            let vector = cols.is_multiple_of(4) && is_aligned4(views.0.as_ptr()) && is_aligned4(views.1.as_mut_ptr());
            // SAFETY: the row is inside the matrix; the vector path only with both rows aligned
            // and cols a multiple of 4; KERNEL launches THREADS threads.
            unsafe {
                if vector {
                    staged_row::<true>(views, cols, (staged, maxes, sums))
                } else {
                    staged_row::<false>(views, cols, (staged, maxes, sums))
                }
            }
        } else {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
            unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, row, cols) };
        }
    }
}

/// One block of 1024 threads per row, alone on its SM (at most 64 registers), with 160 KiB of
/// shared memory.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_wide_staged,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Staged::BYTES),
    grid,
};
