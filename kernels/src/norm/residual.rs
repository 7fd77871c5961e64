//! A norm with the residual add of a transformer block fused in front: `h = x + residual`
//! (rounded to the element type, as PyTorch's `x + residual` is), written out as the next
//! residual stream, then `y = norm(h)`, in f32 or bf16 ([`RowElement`]). Without a residual (an
//! empty view), the norm of x alone. The row in registers, read once: a warp per row up to
//! [`WARP_COLS`] columns, a block up to [`BLOCK_COLS`]; longer rows in three passes, each adding
//! the residual again (so that no pass reads what another thread wrote).
//!
//! Each thread holds [`SLOTS`] elements: 16-byte vectors of 4 f32 or 8 bf16 where every row and
//! vector is 16-byte aligned and cols a multiple of the vector, single elements otherwise.

use super::three_pass::Sums;
use super::{THREADS, WARPS};
use crate::element::RowElement;
use crate::reduce::{Sum, warp_combine};
use crate::softmax::block_sum;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, is_aligned4, thread_idx, unrolled};
use ptxkit::{Dim3, Family, Kernel, Problem, SharedMemory, kernel};

/// Elements each thread holds.
pub const SLOTS: u32 = 32;
/// The longest row a warp takes.
pub const WARP_COLS: u32 = WARP_SIZE * SLOTS;
/// The longest row a block holds.
pub const BLOCK_COLS: u32 = THREADS * SLOTS;

/// A norm with a fused residual add over each row of a `rows × cols` matrix of `E`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidualNorm<E> {
    pub rows: u32,
    pub cols: u32,
    pub element: core::marker::PhantomData<E>,
}

impl<E: RowElement> Problem for ResidualNorm<E> {
    /// `(input, residual, sum, weight, bias, output, mean, rstd, rows, cols, eps)`: views of the rows
    /// × cols input, residual (or empty: no add), sum (`input + residual`, written; empty with the
    /// residual) and output; `weight` and `bias` of `cols` elements or empty; `mean` and `rstd` of
    /// `rows` f32 or empty (not wanted; RMS norm writes no mean).
    type Args = (
        GlobalSlice<E>,
        GlobalSlice<E>,
        GlobalSliceMut<E>,
        GlobalSlice<E>,
        GlobalSlice<E>,
        GlobalSliceMut<E>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        u32,
        u32,
        f32,
    );
}

/// One row's views: its input, residual and sum (or empty), and output.
#[derive(Clone, Copy)]
struct Row<E: RowElement> {
    x: GlobalSlice<E>,
    residual: GlobalSlice<E>,
    sum: GlobalSliceMut<E>,
    y: GlobalSliceMut<E>,
}

impl<E: RowElement> Row<E> {
    /// h at column `c`: x + residual rounded to E, or x.
    ///
    /// # Safety
    /// `c` is inside the row.
    #[inline(always)]
    unsafe fn h(&self, c: u32) -> f32 {
        // SAFETY: the caller's promise.
        let x = unsafe { self.x.get_unchecked(c) }.to_f32();
        if self.residual.is_empty() {
            return x;
        }
        // SAFETY: as above.
        E::from_f32(x + unsafe { self.residual.get_unchecked(c) }.to_f32()).to_f32()
    }
}

/// Weight, bias and eps.
#[derive(Clone, Copy)]
struct Affine<E: RowElement> {
    weight: GlobalSlice<E>,
    bias: GlobalSlice<E>,
    eps: f32,
}

impl<E: RowElement> Affine<E> {
    /// `(h − mean)·rstd·weight + bias` at column `c` (the weight 1 and bias 0 where empty).
    ///
    /// # Safety
    /// `c` is below the row's length.
    #[inline(always)]
    unsafe fn apply(&self, h: f32, (mean, rstd): (f32, f32), (w, b): (f32, f32)) -> f32 {
        let mut y = (h - mean) * rstd;
        if !self.weight.is_empty() {
            y *= w;
        }
        if !self.bias.is_empty() {
            y += b;
        }
        y
    }

    /// The weight and bias at column `c` (1 and 0 where empty).
    ///
    /// # Safety
    /// `c` is below the row's length.
    #[inline(always)]
    unsafe fn at(&self, c: u32) -> (f32, f32) {
        // SAFETY: the caller's promise.
        unsafe {
            (
                if self.weight.is_empty() {
                    1.0
                } else {
                    self.weight.get_unchecked(c).to_f32()
                },
                if self.bias.is_empty() {
                    0.0
                } else {
                    self.bias.get_unchecked(c).to_f32()
                },
            )
        }
    }

    #[inline(always)]
    fn rstd<const CENTERED: bool>(&self, variance: f32) -> f32 {
        super::rstd::<CENTERED>(variance, self.eps)
    }
}

/// Whether every view of the row (and the weight and bias) lets it go by 16-byte vectors.
#[inline(always)]
fn by_vectors<E: RowElement>(row: &Row<E>, affine: &Affine<E>, cols: u32) -> bool {
    let ok = |p: *const E, empty: bool| empty || is_aligned4(p);
    cols.is_multiple_of(E::LANES)
        && is_aligned4(row.x.as_ptr())
        && is_aligned4(row.y.as_mut_ptr())
        && ok(row.residual.as_ptr(), row.residual.is_empty())
        && ok(row.sum.as_mut_ptr().cast_const(), row.sum.is_empty())
        && ok(affine.weight.as_ptr(), affine.weight.is_empty())
        && ok(affine.bias.as_ptr(), affine.bias.is_empty())
}

/// Normalises `row` held in registers by member `me` of a `group` of threads (cols ≤
/// [`SLOTS`]·group); `sum_of` adds a value over the group (every member calls it twice). Returns
/// (mean, rstd).
///
/// # Safety
/// The row's views hold `cols` elements (or none: the residual and sum); the affine's `cols` or
/// none.
#[inline(always)]
unsafe fn row_in_registers<E: RowElement, const CENTERED: bool>(
    row: Row<E>,
    affine: Affine<E>,
    cols: u32,
    (me, group): (u32, u32),
    sum_of: impl FnMut(f32) -> f32,
) -> (f32, f32) {
    // SAFETY: forwarded; the vector path only where `by_vectors` says so.
    unsafe {
        if by_vectors(&row, &affine, cols) {
            row_body::<E, CENTERED, true>(row, affine, cols, (me, group), sum_of)
        } else {
            row_body::<E, CENTERED, false>(row, affine, cols, (me, group), sum_of)
        }
    }
}

/// [`row_in_registers`] by 16-byte vectors (`VECTOR`) or single elements.
///
/// # Safety
/// As for [`row_in_registers`]; with `VECTOR`, every view 16-byte aligned and cols a multiple of
/// [`RowElement::LANES`].
#[inline(always)]
unsafe fn row_body<E: RowElement, const CENTERED: bool, const VECTOR: bool>(
    row: Row<E>,
    affine: Affine<E>,
    cols: u32,
    (me, group): (u32, u32),
    mut sum_of: impl FnMut(f32) -> f32,
) -> (f32, f32) {
    let lanes = E::LANES;
    // Slot s: lane s % LANES of this thread's vector s / LANES (vector v of the row at columns
    // LANES·v …), or column me + group·s.
    let column = |s: u32| {
        if VECTOR {
            lanes * (me + group * (s / lanes)) + s % lanes
        } else {
            me + group * s
        }
    };
    let inside = |s: u32| column(s) < cols;
    let mut h = [0.0f32; SLOTS as usize];
    unrolled::<SLOTS>(|s| {
        if VECTOR {
            if s % lanes == 0 && inside(s) {
                let c = column(s);
                // SAFETY: the vector is inside the row (cols a multiple of LANES) and aligned.
                let x = unsafe { E::load_vector(row.x, c) };
                let mut sum = x;
                if !row.residual.is_empty() {
                    // SAFETY: as above.
                    let r = unsafe { E::load_vector(row.residual, c) };
                    unrolled::<8>(|k| sum[k as usize] = E::from_f32(x[k as usize] + r[k as usize]).to_f32());
                    // SAFETY: as above: the sum's view is the residual's shape.
                    unsafe { E::store_vector(row.sum, c, sum) };
                }
                unrolled::<8>(|k| {
                    if k < lanes {
                        h[(s + k) as usize] = sum[k as usize];
                    }
                });
            }
        } else if inside(s) {
            let c = column(s);
            // SAFETY: c is inside the row.
            let value = unsafe { row.h(c) };
            if !row.sum.is_empty() {
                // SAFETY: as above.
                unsafe { row.sum.set_unchecked(c, E::from_f32(value)) };
            }
            h[s as usize] = value;
        }
    });
    let mean = if CENTERED {
        let mut sum = 0.0f32;
        unrolled::<SLOTS>(|s| sum += h[s as usize]);
        sum_of(sum) / cols as f32
    } else {
        0.0
    };
    let mut squares = 0.0f32;
    unrolled::<SLOTS>(|s| {
        if inside(s) {
            let d = h[s as usize] - mean;
            squares += d * d;
        }
    });
    let rstd = affine.rstd::<CENTERED>(sum_of(squares) / cols as f32);
    unrolled::<SLOTS>(|s| {
        if VECTOR {
            if s % lanes == 0 && inside(s) {
                let c = column(s);
                let weights = if affine.weight.is_empty() {
                    [1.0; 8]
                } else {
                    // SAFETY: as for the loads: the weight holds a row's elements, aligned.
                    unsafe { E::load_vector(affine.weight, c) }
                };
                let biases = if affine.bias.is_empty() {
                    [0.0; 8]
                } else {
                    // SAFETY: as above.
                    unsafe { E::load_vector(affine.bias, c) }
                };
                let y = core::array::from_fn(|k| {
                    let at = (s as usize + k).min(SLOTS as usize - 1);
                    // SAFETY: slots past LANES are not stored.
                    unsafe { affine.apply(h[at], (mean, rstd), (weights[k], biases[k])) }
                });
                // SAFETY: as for the loads.
                unsafe { E::store_vector(row.y, c, y) };
            }
        } else if inside(s) {
            let c = column(s);
            // SAFETY: c is inside the row; the affine's views hold a row's elements or none.
            let y = unsafe { affine.apply(h[s as usize], (mean, rstd), affine.at(c)) };
            // SAFETY: as above.
            unsafe { row.y.set_unchecked(c, E::from_f32(y)) };
        }
    });
    (mean, rstd)
}

/// Row `row` in three passes by the whole block (rows longer than a block holds): the mean, the
/// squared deviations, then the outputs and the sum, h recomputed from x and the residual in each.
///
/// # Safety
/// The row's views hold `cols` elements (or none); the block has [`THREADS`] threads, all calling.
#[inline(always)]
unsafe fn block_row<E: RowElement, const CENTERED: bool>(
    sums: ptxkit::device::SharedSlice<f32>,
    row: Row<E>,
    affine: Affine<E>,
    cols: u32,
) -> (f32, f32) {
    let t = thread_idx().x;
    let mean = if CENTERED {
        let mut sum = 0.0f32;
        let mut c = t;
        while c < cols {
            // SAFETY: c < cols.
            sum += unsafe { row.h(c) };
            c += THREADS;
        }
        // SAFETY: every thread of the block calls it.
        (unsafe { block_sum::<WARPS>(sums, sum) }) / cols as f32
    } else {
        0.0
    };
    let mut squares = 0.0f32;
    let mut c = t;
    while c < cols {
        // SAFETY: as above.
        let d = unsafe { row.h(c) } - mean;
        squares += d * d;
        c += THREADS;
    }
    // SAFETY: as above.
    let rstd = affine.rstd::<CENTERED>((unsafe { block_sum::<WARPS>(sums, squares) }) / cols as f32);
    let mut c = t;
    while c < cols {
        // SAFETY: as above; the affine's views hold a row's elements or none.
        unsafe {
            let h = row.h(c);
            if !row.sum.is_empty() {
                row.sum.set_unchecked(c, E::from_f32(h));
            }
            row.y
                .set_unchecked(c, E::from_f32(affine.apply(h, (mean, rstd), affine.at(c))));
        }
        c += THREADS;
    }
    (mean, rstd)
}

/// The kernel's body: a warp per row, a block per row, or the three passes, by `cols`.
///
/// # Safety
/// The kernel's contract; the launch [`kernel_of`]'s grid for `rows` and `cols`.
#[inline(always)]
unsafe fn normalise<E: RowElement, const CENTERED: bool>(args: <ResidualNorm<E> as Problem>::Args) {
    let (input, residual, sum, weight, bias, output, means, rstds, rows, cols, eps) = args;
    let Sums { sums } = Sums::carve();
    let affine = Affine { weight, bias, eps };
    let t = thread_idx().x;
    let views = |r: u32| {
        let base = r as usize * cols as usize;
        let with = |v: GlobalSlice<E>| if v.is_empty() { v } else { v.tail(base).head(cols) };
        Row {
            x: input.tail(base).head(cols),
            residual: with(residual),
            sum: if sum.is_empty() { sum } else { sum.tail(base).head(cols) },
            y: output.tail(base).head(cols),
        }
    };
    let write = |r: u32, (mean, rstd): (f32, f32)| {
        // SAFETY: r < rows; each view holds rows elements or none.
        unsafe {
            if CENTERED && !means.is_empty() {
                means.set_unchecked(r, mean);
            }
            if !rstds.is_empty() {
                rstds.set_unchecked(r, rstd);
            }
        }
    };
    if cols <= WARP_COLS {
        let r = block_idx().x * WARPS + t / WARP_SIZE;
        // Only a whole warp leaves here: the warp path has no barrier.
        if r >= rows {
            return;
        }
        // SAFETY: the row is inside the matrices; each lane calls the warp's sums.
        let stats = unsafe {
            row_in_registers::<E, CENTERED>(views(r), affine, cols, (t % WARP_SIZE, WARP_SIZE), warp_combine::<Sum>)
        };
        if t.is_multiple_of(WARP_SIZE) {
            write(r, stats);
        }
    } else {
        let r = block_idx().x;
        let stats = if cols <= BLOCK_COLS {
            // SAFETY: one block per row; every thread calls both sums.
            unsafe {
                row_in_registers::<E, CENTERED>(views(r), affine, cols, (t, THREADS), |s| block_sum::<WARPS>(sums, s))
            }
        } else {
            // SAFETY: as above.
            unsafe { block_row::<E, CENTERED>(sums, views(r), affine, cols) }
        };
        if t == 0 {
            write(r, stats);
        }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), RESIDENT_BLOCKS_F32)]
    /// Layer norm of x + residual, f32: warp w of block b takes row 8b + w (rows up to WARP_COLS);
    /// block b row b (longer rows).
    pub unsafe fn layer_norm_residual(input: GlobalSlice<f32>, residual: GlobalSlice<f32>, sum: GlobalSliceMut<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<f32, true>((input, residual, sum, weight, bias, output, mean, rstd, rows, cols, eps)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), RESIDENT_BLOCKS_F32)]
    /// RMS norm of x + residual, f32, as [`layer_norm_residual`].
    pub unsafe fn rms_norm_residual(input: GlobalSlice<f32>, residual: GlobalSlice<f32>, sum: GlobalSliceMut<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<f32, false>((input, residual, sum, weight, bias, output, mean, rstd, rows, cols, eps)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), RESIDENT_BLOCKS)]
    /// Layer norm of x + residual, bf16 in and out, as [`layer_norm_residual`].
    pub unsafe fn layer_norm_residual_bf16(input: GlobalSlice<Bf16>, residual: GlobalSlice<Bf16>, sum: GlobalSliceMut<Bf16>, weight: GlobalSlice<Bf16>, bias: GlobalSlice<Bf16>, output: GlobalSliceMut<Bf16>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<Bf16, true>((input, residual, sum, weight, bias, output, mean, rstd, rows, cols, eps)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), RESIDENT_BLOCKS)]
    /// RMS norm of x + residual, bf16 in and out, as [`layer_norm_residual`].
    pub unsafe fn rms_norm_residual_bf16(input: GlobalSlice<Bf16>, residual: GlobalSlice<Bf16>, sum: GlobalSliceMut<Bf16>, weight: GlobalSlice<Bf16>, bias: GlobalSlice<Bf16>, output: GlobalSliceMut<Bf16>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, rows: u32, cols: u32, eps: f32) {
        // SAFETY: the kernel's contract.
        unsafe { normalise::<Bf16, false>((input, residual, sum, weight, bias, output, mean, rstd, rows, cols, eps)) }
    }
}

/// Blocks resident per SM the compiler must leave room for, bf16 (64 registers a thread): half the
/// SM's threads, for enough loads in flight to reach the copy ceiling; unbounded, ptxas takes over
/// 90 registers and leaves room for two.
const RESIDENT_BLOCKS: u32 = 4;

/// The same for f32 (85 registers): at 64, RMS norm's row no longer fits without a stack frame.
const RESIDENT_BLOCKS_F32: u32 = 3;

/// Blocks of [`THREADS`]: eight rows each up to [`WARP_COLS`] columns, one row each beyond.
const fn grid<E>(p: &ResidualNorm<E>, _: ptxkit::Occupancy) -> Dim3 {
    Dim3::x(if p.cols <= WARP_COLS {
        p.rows.div_ceil(WARPS)
    } else {
        p.rows
    })
}

/// The kernel of one norm over one element type.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<ResidualNorm<E> as Problem>::Args>,
) -> Kernel<ResidualNorm<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(Sums::BYTES),
        grid: grid::<E>,
    }
}

/// Layer norm with the residual add, f32: the registry's list.
pub const LAYER_FAMILY: Family<ResidualNorm<f32>> =
    Family::new("layer_norm_residual", &[kernel_of::<f32>(layer_norm_residual)]);
/// RMS norm with the residual add, f32: the registry's list.
pub const RMS_FAMILY: Family<ResidualNorm<f32>> =
    Family::new("rms_norm_residual", &[kernel_of::<f32>(rms_norm_residual)]);
/// Layer norm with the residual add, bf16: the registry's list.
pub const LAYER_BF16_FAMILY: Family<ResidualNorm<Bf16>> = Family::new(
    "layer_norm_residual_bf16",
    &[kernel_of::<Bf16>(layer_norm_residual_bf16)],
);
/// RMS norm with the residual add, bf16: the registry's list.
pub const RMS_BF16_FAMILY: Family<ResidualNorm<Bf16>> =
    Family::new("rms_norm_residual_bf16", &[kernel_of::<Bf16>(rms_norm_residual_bf16)]);

#[cfg(not(target_arch = "nvptx64"))]
impl<E> ResidualNorm<E> {
    /// At least one row and column; elements within 32-bit indices.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("row normalisation", rows, cols)?;
        Ok(ResidualNorm {
            rows,
            cols,
            element: core::marker::PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
