//! Row softmax of a rows × cols f32 matrix: `out[r][c] = e^(x[r][c] − m_r) / Σ_c e^(x[r][c] − m_r)`,
//! with m_r the row's maximum (so that no e^x overflows, whatever the inputs). One block per row,
//! one idea per file:
//!
//! * [`three_pass`]: the row's maximum, then the sum of the exponentials, then the outputs: three
//!   reads of the row;
//! * [`online`]: maximum and sum in one read (each thread keeps a running maximum and rescales its
//!   running sum when the maximum grows), then the outputs: two reads;
//! * [`staged`]: the same, with the row kept in shared memory between the two (rows up to
//!   [`staged::STAGE`] elements): one read and one write, the least a softmax can move;
//! * [`registers`]: the row in registers instead (a warp per row up to 1024 columns, a block up to
//!   8192), one e^x per element, no shared-memory copy;
//! * [`wide`]: the same in a block of 512 or 1024 threads, for rows up to 16384 or 32768 columns;
//! * [`wide_staged`]: 1024 threads' registers and 160 KiB of shared memory ([`on_chip`]), for
//!   rows up to 65536 columns (vocabulary-wide rows) read once, and past them only the rest twice.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod on_chip;
pub mod online;
pub mod registers;
pub mod staged;
pub mod three_pass;
pub mod wide;
pub mod wide_staged;

use ptxkit::Dim3;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, exp, shfl_xor, sync_threads, thread_idx};
use ptxkit::{Family, Occupancy, Problem};

/// Threads per block (one block per row), for every variant.
pub const THREADS: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;

/// A softmax over each row of a `rows × cols` row-major matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Softmax {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for Softmax {
    /// `(input, output, rows, cols)`: views of the rows × cols input and output.
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>, u32, u32);
}

/// Every softmax kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Softmax> = Family::new(
    "softmax",
    &[
        three_pass::KERNEL,
        online::KERNEL,
        staged::KERNEL,
        registers::KERNEL,
        wide::KERNEL_512,
        wide::KERNEL,
        wide_staged::KERNEL,
    ],
);

/// The views of one row: the `cols` elements from `base` of the input and of the output.
#[inline(always)]
pub(crate) fn row_views(
    (input, output): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    base: usize,
    cols: u32,
) -> (GlobalSlice<f32>, GlobalSliceMut<f32>) {
    (input.tail(base).head(cols), output.tail(base).head(cols))
}

/// One block per row.
pub(crate) const fn grid(p: &Softmax, _: Occupancy) -> Dim3 {
    Dim3::x(p.rows)
}

#[cfg(not(target_arch = "nvptx64"))]
impl Softmax {
    /// At least one row and column, elements within 32-bit indices (the grid's limits are checked at
    /// every launch).
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("softmax", rows, cols)?;
        Ok(Softmax { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A running maximum and the sum of e^(x − maximum) over the values seen.
#[derive(Clone, Copy)]
pub struct Running {
    pub max: f32,
    pub sum: f32,
}

impl Running {
    /// Nothing seen yet: a sum of 0 below the lowest finite maximum. Finite, so that a −∞ (a
    /// masked entry) adds e^(−∞) = 0 where −∞ − −∞ would be NaN; a row of −∞ alone keeps a sum of
    /// 0 and comes out 0/0, NaN, as PyTorch's does.
    pub const EMPTY: Running = Running {
        max: f32::MIN,
        sum: 0.0,
    };

    /// `x` seen too: when the maximum grows, the sum so far is rescaled to it. +∞ adds
    /// e^(∞ − ∞), NaN, as does a NaN: such a row comes out NaN, as PyTorch's does.
    #[inline(always)]
    pub fn see(self, x: f32) -> Running {
        if x > self.max {
            Running {
                max: x,
                // x − x is 0, or NaN for +∞.
                #[allow(clippy::eq_op)]
                sum: self.sum * exp(self.max - x) + (1.0 + (x - x)),
            }
        } else {
            Running {
                max: self.max,
                sum: self.sum + exp(x - self.max),
            }
        }
    }

    /// Both sets of values seen. A side with a sum of 0 saw nothing (or only −∞); one whose sum is
    /// NaN (it saw a NaN, perhaps before any number) keeps the result NaN.
    #[inline(always)]
    pub fn merge(self, other: Running) -> Running {
        if other.sum == 0.0 {
            return self;
        }
        if self.sum == 0.0 {
            return other;
        }
        let max = if other.max > self.max { other.max } else { self.max };
        Running {
            max,
            sum: self.sum * exp(self.max - max) + other.sum * exp(other.max - max),
        }
    }
}

/// Combines every thread's `mine` over the block of `N` warps, in every thread: a butterfly of
/// xor-shuffles in each warp, the warps' results through `maxes` and `sums` (at least `N` elements
/// each), then every warp combines those. Every thread of the block must call it.
///
/// # Safety
/// The block has 32·`N` threads; `maxes` and `sums` are not in use between the barriers.
#[inline(always)]
pub unsafe fn block_running<const N: u32>(maxes: SharedSlice<f32>, sums: SharedSlice<f32>, mine: Running) -> Running {
    let r = warp_running(mine);
    let t = thread_idx().x;
    let warp = t / WARP_SIZE;
    // Lane 0 by the thread index (1-D blocks), as the CUDA C twin: one special-register read fewer.
    if t.is_multiple_of(WARP_SIZE) {
        // SAFETY: warp < N.
        unsafe {
            maxes.set_unchecked(warp, r.max);
            sums.set_unchecked(warp, r.sum);
        }
    }
    // Every warp's result is staged before any thread reads them.
    sync_threads();
    let mut all = Running::EMPTY;
    let mut w = 0;
    while w < N {
        // SAFETY: w < N.
        all = all.merge(unsafe {
            Running {
                max: maxes.get_unchecked(w),
                sum: sums.get_unchecked(w),
            }
        });
        w += 1;
    }
    // Every thread has read the results before the slices are used again.
    sync_threads();
    all
}

/// Combines every lane's `mine` over the warp, in every lane: a butterfly of xor-shuffles. Every
/// lane of the warp must call it.
#[inline(always)]
pub fn warp_running(mine: Running) -> Running {
    let mut r = mine;
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let other = Running {
            max: shfl_xor(r.max, mask),
            sum: shfl_xor(r.sum, mask),
        };
        r = r.merge(other);
        mask /= 2;
    }
    r
}

/// The maximum of `mine` over the block, in every thread (as [`block_running`]).
///
/// # Safety
/// As for [`block_running`].
#[inline(always)]
pub unsafe fn block_max<const N: u32>(maxes: SharedSlice<f32>, mine: f32) -> f32 {
    let mut m = mine;
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let other = shfl_xor(m, mask);
        m = if other > m { other } else { m };
        mask /= 2;
    }
    let t = thread_idx().x;
    let warp = t / WARP_SIZE;
    // Lane 0 by the thread index (1-D blocks), as the CUDA C twin: one special-register read fewer.
    if t.is_multiple_of(WARP_SIZE) {
        // SAFETY: warp < N.
        unsafe { maxes.set_unchecked(warp, m) };
    }
    // Every warp's maximum is staged before any thread reads them.
    sync_threads();
    let mut all = f32::NEG_INFINITY;
    let mut w = 0;
    while w < N {
        // SAFETY: w < N.
        let v = unsafe { maxes.get_unchecked(w) };
        all = if v > all { v } else { all };
        w += 1;
    }
    // Every thread has read the maxima before the slice is used again.
    sync_threads();
    all
}

/// The sum of `mine` over the block, in every thread (as [`block_running`]).
///
/// # Safety
/// As for [`block_running`].
#[inline(always)]
pub unsafe fn block_sum<const N: u32>(sums: SharedSlice<f32>, mine: f32) -> f32 {
    let mut s = mine;
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        s += shfl_xor(s, mask);
        mask /= 2;
    }
    let t = thread_idx().x;
    let warp = t / WARP_SIZE;
    // Lane 0 by the thread index (1-D blocks), as the CUDA C twin: one special-register read fewer.
    if t.is_multiple_of(WARP_SIZE) {
        // SAFETY: warp < N.
        unsafe { sums.set_unchecked(warp, s) };
    }
    // Every warp's sum is staged before any thread reads them.
    sync_threads();
    let mut all = 0.0;
    let mut w = 0;
    while w < N {
        // SAFETY: w < N.
        all += unsafe { sums.get_unchecked(w) };
        w += 1;
    }
    // Every thread has read the sums before the slice is used again.
    sync_threads();
    all
}
