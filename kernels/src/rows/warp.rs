//! One warp per row, eight rows per block: lane l combines elements l, l + 32, …, then the warp's
//! butterfly of shuffles. No shared memory, no barrier; rows past the last leave their warp idle.
//! Rows of up to [`NARROW_COLS`] columns go to groups of [`group_lanes`] lanes instead, a lane an
//! element, each warp taking [`NARROW_BATCHES`] batches of rows at once and then the next (a warp
//! per row left most lanes idle, and eight rows a block spent the GPU starting blocks).

use super::RowReduce;
use crate::reduce::{Combine, Max, Sum, THREADS, WARPS, group_combine, warp_combine};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, grid_dim, lane_id, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// The widest rows groups of fewer than 32 lanes take.
pub const NARROW_COLS: u32 = 16;
/// Batches of rows a warp loads at once on the narrow path (a load each in flight per lane).
pub const NARROW_BATCHES: u32 = 4;

/// The lanes that take a row of `cols` ≤ [`NARROW_COLS`] columns: a lane per element, rounded up
/// to a power of two.
pub const fn group_lanes(cols: u32) -> u32 {
    cols.next_power_of_two()
}

/// Rows of `cols` ≤ [`NARROW_COLS`] by groups of `G` lanes, a lane an element: each warp takes
/// [`NARROW_BATCHES`] batches of 32 / `G` rows at once, then the batches a grid's warps further.
///
/// # Safety
/// `input` holds rows × cols elements, `output` rows; `G` is [`group_lanes`]`(cols)`; the block has
/// THREADS threads.
#[inline(always)]
unsafe fn narrow_rows<O: Combine, const G: u32>(
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let lane = lane_id();
    let (per_warp, me) = (WARP_SIZE / G, lane % G);
    let batches = rows.div_ceil(per_warp);
    // Wide: the last batch's groups may count past u32 (rows near 2^32).
    let row_of = |batch: u32| batch as usize * per_warp as usize + (lane / G) as usize;
    let mut batch = (block_idx().x * WARPS + thread_idx().x / WARP_SIZE) * NARROW_BATCHES;
    // Uniform over the warp, whose lanes meet in the shuffles.
    while batch < batches {
        let mut x = [O::IDENTITY; NARROW_BATCHES as usize];
        unrolled::<NARROW_BATCHES>(|i| {
            let row = row_of(batch + i);
            if row < rows as usize && me < cols {
                // SAFETY: row < rows and me < cols: inside the matrix.
                x[i as usize] = unsafe { input.get_unchecked(row * cols as usize + me as usize) };
            }
        });
        // Every batch's shuffles before any store, and one test of the lane around the stores:
        // a test per batch let the compiler copy the shuffles into both of its branches (for groups
        // of four lanes), where the GPU then ran them a batch at a time behind divergence checks.
        unrolled::<NARROW_BATCHES>(|i| x[i as usize] = group_combine::<O, G>(x[i as usize]));
        if me == 0 {
            unrolled::<NARROW_BATCHES>(|i| {
                let row = row_of(batch + i);
                if row < rows as usize {
                    // SAFETY: row < rows: one output per row.
                    unsafe { output.set_unchecked(row, x[i as usize]) };
                }
            });
        }
        batch += grid_dim().x * WARPS * NARROW_BATCHES;
    }
}

/// Rows of `cols` combined by `O`: the narrow path up to [`NARROW_COLS`] (one body per group
/// size, its shuffles constants), else [`row_body`].
///
/// # Safety
/// As for [`row_body`].
#[inline(always)]
unsafe fn rows_body<O: Combine>(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
    // SAFETY: forwarded; G is group_lanes(cols) on the narrow path.
    unsafe {
        match cols {
            1 => narrow_rows::<O, 1>(input, output, rows, cols),
            2 => narrow_rows::<O, 2>(input, output, rows, cols),
            3..=4 => narrow_rows::<O, 4>(input, output, rows, cols),
            5..=8 => narrow_rows::<O, 8>(input, output, rows, cols),
            9..=NARROW_COLS => narrow_rows::<O, 16>(input, output, rows, cols),
            _ => row_body::<O>(input, output, rows, cols),
        }
    }
}

/// `output[r]` = row r (warp r % 8 of block r / 8) combined by `O`.
///
/// # Safety
/// `input` holds rows × cols elements, `output` rows; the block has THREADS threads.
#[inline(always)]
unsafe fn row_body<O: Combine>(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
    let row = block_idx().x * WARPS + thread_idx().x / WARP_SIZE;
    // The whole warp takes the same branch: the shuffles below see all 32 lanes.
    if row >= rows {
        return;
    }
    let base = row as usize * cols as usize;
    let mut mine = O::IDENTITY;
    let mut c = lane_id();
    while c < cols {
        // SAFETY: c < cols: inside row `row`.
        mine = O::combine(mine, unsafe { input.get_unchecked(base + c as usize) });
        c += WARP_SIZE;
    }
    let total = warp_combine::<O>(mine);
    if lane_id() == 0 {
        // SAFETY: row < rows: one output per row.
        unsafe { output.set_unchecked(row, total) };
    }
}

kernel! {
    /// `output[r]` = the sum of row r.
    pub unsafe fn row_sum_warp(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; SUM_KERNEL launches THREADS threads.
        unsafe { rows_body::<Sum>(input, output, rows, cols) }
    }
}

kernel! {
    /// `output[r]` = the maximum of row r.
    pub unsafe fn row_max_warp(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; MAX_KERNEL launches THREADS threads.
        unsafe { rows_body::<Max>(input, output, rows, cols) }
    }
}

/// Blocks for the narrow path: a warp per [`NARROW_BATCHES`] batches of rows, up to the blocks the
/// GPU holds at once (the warps then go round again).
pub const fn narrow_grid(rows: u32, cols: u32, device: Occupancy) -> u32 {
    let batches = rows.div_ceil(WARP_SIZE / group_lanes(cols));
    device.at_most_resident(batches.div_ceil(NARROW_BATCHES).div_ceil(WARPS))
}

/// Blocks of 256 threads: batches of rows by groups of lanes up to [`NARROW_COLS`] columns, one
/// warp per row beyond.
pub const SUM_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_sum_warp,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, device| {
        Dim3::x(if p.cols <= NARROW_COLS {
            narrow_grid(p.rows, p.cols, device)
        } else {
            p.rows.div_ceil(WARPS)
        })
    },
};

/// As [`SUM_KERNEL`], for the maximum.
pub const MAX_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_max_warp,
    ..SUM_KERNEL
};
