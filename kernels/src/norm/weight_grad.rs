//! The gradients of the norms' weight and bias: sums down the columns, `dweight[c] = Σ_r dy·x̂`
//! and `dbias[c] = Σ_r dy`, with x̂ = (x − mean)·rstd from the forward pass's statistics (mean 0
//! for RMS norm). A block of [`WARPS`] warps takes a strip of 32 columns: lane l its column, warp
//! w rows w, w + WARPS, … (each warp's read of a row is 128 contiguous bytes), [`UNROLL`] rows'
//! loads in flight at once and added in row order; the warps' sums meet in shared memory, in warp
//! order, so the result does not depend on timing.

use super::NormWeightGrad;
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, WARP_SIZE, block_idx, lane_id, sync_threads, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads of a block: a strip's rows are shared by 32 warps, so that a strip per SM (4096
/// columns are 128 strips) has loads enough in flight to reach the copy ceiling.
pub const THREADS: u32 = 1024;
/// Warps of a block: each sums every WARPS-th row.
pub const WARPS: u32 = THREADS / WARP_SIZE;
/// Rows whose loads a warp issues together: one row at a time waited a load latency per row.
const UNROLL: u32 = 4;

shared_memory! {
    /// Each warp's sums for the strip's 32 columns: dweight's, then dbias's.
    pub struct Partials {
        pub weight: SharedMatrix<f32> = MatrixLayout::dense(WARPS, WARP_SIZE),
        pub bias: SharedMatrix<f32> = MatrixLayout::dense(WARPS, WARP_SIZE),
    }
}

/// The strip of block `block_idx().x`: column 32·b + lane.
///
/// # Safety
/// `input` and `grad_output` hold rows × cols; `means` the rows' means where `CENTERED`, `rstds`
/// their rstds; `dweight` cols; `dbias` cols or none; the block has [`THREADS`] threads.
#[inline(always)]
unsafe fn strip<const CENTERED: bool>(
    (input, grad_output): (GlobalSlice<f32>, GlobalSlice<f32>),
    (means, rstds): (GlobalSlice<f32>, GlobalSlice<f32>),
    (dweight, dbias): (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    (rows, cols): (u32, u32),
) {
    let Partials { weight, bias } = Partials::carve();
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let c = block_idx().x * WARP_SIZE + lane;
    let (mut sum_w, mut sum_b) = (0.0f32, 0.0f32);
    if c < cols {
        // Row r's (dy, dy·x̂).
        let terms = |r: u32| {
            let at = r as usize * cols as usize + c as usize;
            // SAFETY: r < rows, c < cols: inside the matrices; the statistics hold a row's.
            let (x, dy, mean, rstd) = unsafe {
                (
                    input.get_unchecked(at),
                    grad_output.get_unchecked(at),
                    if CENTERED { means.get_unchecked(r) } else { 0.0 },
                    rstds.get_unchecked(r),
                )
            };
            (dy, dy * ((x - mean) * rstd))
        };
        let mut r = warp;
        while r + (UNROLL - 1) * WARPS < rows {
            let mut read = [(0.0f32, 0.0f32); UNROLL as usize];
            unrolled::<UNROLL>(|k| read[k as usize] = terms(r + k * WARPS));
            unrolled::<UNROLL>(|k| {
                sum_b += read[k as usize].0;
                sum_w += read[k as usize].1;
            });
            r += UNROLL * WARPS;
        }
        while r < rows {
            let (dy, term) = terms(r);
            sum_b += dy;
            sum_w += term;
            r += WARPS;
        }
    }
    // SAFETY: warp < WARPS, lane < 32: inside the partials.
    unsafe {
        weight.set_unchecked(warp, lane, sum_w);
        bias.set_unchecked(warp, lane, sum_b);
    }
    // Every warp's sums are in before warp 0 adds them.
    sync_threads();
    if warp == 0 && c < cols {
        let (mut total_w, mut total_b) = (0.0f32, 0.0f32);
        let mut w = 0;
        while w < WARPS {
            // SAFETY: as above.
            unsafe {
                total_w += weight.get_unchecked(w, lane);
                total_b += bias.get_unchecked(w, lane);
            }
            w += 1;
        }
        // SAFETY: c < cols; the bias's gradient only where wanted.
        unsafe {
            dweight.set_unchecked(c, total_w);
            if !dbias.is_empty() {
                dbias.set_unchecked(c, total_b);
            }
        }
    }
}

kernel! {
    /// Block b: the weight's and bias's gradients of layer norm for columns 32b to 32b + 31.
    pub unsafe fn layer_norm_weight_grad(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, dweight: GlobalSliceMut<f32>, dbias: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        // SAFETY: the kernel's contract.
        unsafe { strip::<true>((input, grad_output), (mean, rstd), (dweight, dbias), (rows, cols)) }
    }
}

kernel! {
    /// Block b: the weight's (and bias's, where wanted) gradients of RMS norm for columns 32b to
    /// 32b + 31.
    pub unsafe fn rms_norm_weight_grad(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, dweight: GlobalSliceMut<f32>, dbias: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        // SAFETY: the kernel's contract.
        unsafe { strip::<false>((input, grad_output), (mean, rstd), (dweight, dbias), (rows, cols)) }
    }
}

/// Blocks of [`THREADS`] threads, one per strip of 32 columns; one resident per SM at least.
pub const LAYER_KERNEL: Kernel<NormWeightGrad> = Kernel {
    code: layer_norm_weight_grad,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.cols.div_ceil(WARP_SIZE)),
};

/// As [`LAYER_KERNEL`], for RMS norm.
pub const RMS_KERNEL: Kernel<NormWeightGrad> = Kernel {
    code: rms_norm_weight_grad,
    ..LAYER_KERNEL
};
