//! Rung 2: the row held in registers between the statistics and the outputs, each element read
//! from global memory once and written once. Up to [`WARP_COLS`] columns a warp takes a row (eight
//! rows per block, no barrier); up to [`BLOCK_COLS`] the block takes one; longer rows take the
//! three passes of [`super::three_pass`].
//!
//! Each thread holds up to [`VECTORS`] 16-byte vectors of the row (or as many single elements
//! where the row, weight or bias is not 16-byte aligned, or cols is not a multiple of 4), all
//! loads issued before any is used. Slots past the row hold 0 and are left out of the sums.

use super::three_pass::{Sums, block_row};
use super::{Affine, RowNorm, THREADS, WARPS, write_statistics};
use crate::reduce::{Sum, warp_combine};
use crate::softmax::block_sum;
use ptxkit::device::{Float4, GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, is_aligned4, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

// The geometry of softmax's row in registers, the same walk over the same rows: 16-byte vectors
// each thread holds, and the longest rows a warp and a block take.
pub use crate::softmax::registers::{BLOCK_COLS, VECTORS, WARP_COLS, by_warp};

/// Normalises the row `src` into `dst` (`cols` elements, at most 4·[`VECTORS`]·`group`), held in
/// registers by member `me` of a `group` of threads; `sum_of` adds a value over the group (every
/// member calls it twice). Returns the row's (mean, rstd).
///
/// # Safety
/// `src` and `dst` hold `cols` elements; the affine's views `cols` or none.
#[inline(always)]
unsafe fn row_in_registers<const CENTERED: bool>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    affine: Affine,
    cols: u32,
    (me, group): (u32, u32),
    sum_of: impl FnMut(f32) -> f32,
) -> (f32, f32) {
    let aligned = |p: *const f32| is_aligned4(p);
    let vector = cols.is_multiple_of(4)
        && aligned(src.as_ptr())
        && aligned(dst.as_mut_ptr())
        && (affine.weight.is_empty() || aligned(affine.weight.as_ptr()))
        && (affine.bias.is_empty() || aligned(affine.bias.as_ptr()));
    // SAFETY: forwarded; the vector path only where every row is 16-byte aligned and cols a
    // multiple of 4.
    unsafe {
        if vector {
            row_body::<CENTERED, true>((src, dst), affine, cols, (me, group), sum_of)
        } else {
            row_body::<CENTERED, false>((src, dst), affine, cols, (me, group), sum_of)
        }
    }
}

/// [`row_in_registers`] by 16-byte vectors (`VECTOR`) or by single elements.
///
/// # Safety
/// As for [`row_in_registers`]; with `VECTOR`, the rows 16-byte aligned and `cols` a multiple of 4.
#[inline(always)]
unsafe fn row_body<const CENTERED: bool, const VECTOR: bool>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    affine: Affine,
    cols: u32,
    (me, group): (u32, u32),
    mut sum_of: impl FnMut(f32) -> f32,
) -> (f32, f32) {
    // Slot (j, k) of this thread is column 4·(me + group·j) + k (vector) or me + group·(4j + k).
    let column = |j: u32, k: u32| {
        if VECTOR {
            4 * (me + group * j) + k
        } else {
            me + group * (4 * j + k)
        }
    };
    let inside = |j: u32, k: u32| column(j, k) < cols;
    let mut x = [[0.0f32; 4]; VECTORS as usize];
    unrolled::<VECTORS>(|j| {
        if VECTOR {
            if inside(j, 0) {
                // SAFETY: the vector's four columns are inside the row (cols a multiple of 4),
                // 16-byte aligned.
                x[j as usize] = unsafe { src.get4_unchecked(column(j, 0) as usize) }.0;
            }
        } else {
            unrolled::<4>(|k| {
                if inside(j, k) {
                    // SAFETY: the column is inside the row.
                    x[j as usize][k as usize] = unsafe { src.get_unchecked(column(j, k) as usize) };
                }
            });
        }
    });
    let mean = if CENTERED {
        let mut sum = 0.0f32;
        unrolled::<VECTORS>(|j| unrolled::<4>(|k| sum += x[j as usize][k as usize]));
        sum_of(sum) / cols as f32
    } else {
        0.0
    };
    let mut squares = 0.0f32;
    unrolled::<VECTORS>(|j| {
        unrolled::<4>(|k| {
            if inside(j, k) {
                let d = x[j as usize][k as usize] - mean;
                squares += d * d;
            }
        })
    });
    let rstd = affine.rstd::<CENTERED>(sum_of(squares) / cols as f32);
    unrolled::<VECTORS>(|j| {
        if VECTOR {
            if inside(j, 0) {
                let c = column(j, 0) as usize;
                // SAFETY: as for the loads; the affine's views hold a row's elements or none.
                let four = core::array::from_fn(|k| unsafe { affine.apply(x[j as usize][k], (mean, rstd), c + k) });
                // SAFETY: as for the loads.
                unsafe { dst.set4_unchecked(c, Float4(four)) };
            }
        } else {
            unrolled::<4>(|k| {
                if inside(j, k) {
                    let c = column(j, k) as usize;
                    // SAFETY: the column is inside the row; the affine's views as above.
                    unsafe { dst.set_unchecked(c, affine.apply(x[j as usize][k as usize], (mean, rstd), c)) };
                }
            });
        }
    });
    (mean, rstd)
}

/// The kernel's body: a warp per row, a block per row, or the three passes, by `cols`.
///
/// # Safety
/// The kernel's contract; the launch [`KERNEL`]'s for `rows` and `cols`.
#[inline(always)]
unsafe fn normalise<const CENTERED: bool>(
    (input, output): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    affine: Affine,
    statistics: (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    rows: u32,
    cols: u32,
) {
    let Sums { sums } = Sums::carve();
    let t = thread_idx().x;
    let views = |row: u32| {
        let base = row as usize * cols as usize;
        (input.tail(base).head(cols), output.tail(base).head(cols))
    };
    if by_warp(cols) {
        let row = block_idx().x * WARPS + t / WARP_SIZE;
        // Only a whole warp leaves here: the warp path has no barrier.
        if row >= rows {
            return;
        }
        // SAFETY: the row is inside the matrices; each lane calls the warp's sums.
        let stats = unsafe {
            row_in_registers::<CENTERED>(
                views(row),
                affine,
                cols,
                (t % WARP_SIZE, WARP_SIZE),
                warp_combine::<Sum>,
            )
        };
        if t.is_multiple_of(WARP_SIZE) {
            // SAFETY: row < rows.
            unsafe { write_statistics::<CENTERED>(statistics, row, stats) };
        }
    } else if cols <= BLOCK_COLS {
        let row = block_idx().x;
        // SAFETY: one block per row (the grid's rows); every thread calls both sums.
        let stats = unsafe {
            row_in_registers::<CENTERED>(views(row), affine, cols, (t, THREADS), |s| block_sum::<WARPS>(sums, s))
        };
        if t == 0 {
            // SAFETY: as above.
            unsafe { write_statistics::<CENTERED>(statistics, row, stats) };
        }
    } else {
        // SAFETY: as above.
        unsafe { block_row::<CENTERED>(sums, (input, output), affine, statistics, block_idx().x, cols) };
    }
}

kernel! {
    /// Layer norm of each row: warp w of block b takes row 8b + w (rows up to WARP_COLS); block b
    /// row b (longer rows).
    pub unsafe fn layer_norm_registers(input: GlobalSlice<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<true>((input, output), Affine { weight, bias, eps }, (mean, rstd), rows, cols) }
    }
}

kernel! {
    /// RMS norm of each row, as [`layer_norm_registers`].
    pub unsafe fn rms_norm_registers(input: GlobalSlice<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<false>((input, output), Affine { weight, bias, eps }, (mean, rstd), rows, cols) }
    }
}

/// 256 threads per block: eight rows per block up to [`WARP_COLS`] columns, one row per block
/// beyond.
pub const LAYER_KERNEL: Kernel<RowNorm> = Kernel {
    code: layer_norm_registers,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Sums::BYTES),
    grid: |p, _| {
        Dim3::x(if by_warp(p.cols) {
            p.rows.div_ceil(WARPS)
        } else {
            p.rows
        })
    },
};

/// As [`LAYER_KERNEL`], for RMS norm.
pub const RMS_KERNEL: Kernel<RowNorm> = Kernel {
    code: rms_norm_registers,
    ..LAYER_KERNEL
};
