//! Register-blocked convolution: the tiled algorithm, with each thread computing a column of V
//! consecutive outputs and the filter held in registers. Each input row the thread loads from
//! shared memory (2R+1 values) serves every output whose window covers it, so an output costs
//! (V + 2R)(2R+1)/V shared loads instead of (2R+1)²: 7.5 instead of 25 for a 5×5 filter at V = 8.
//! Two configurations (V = 4 and V = 8) are registered; the host picks one for the device.

use super::{Conv2d, MAX_RADIUS};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, fma, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Output columns per block: one per thread of a row of threads.
pub const WIDTH: u32 = 32;
/// Rows of threads per block.
pub const THREAD_ROWS: u32 = 8;
const THREADS: u32 = WIDTH * THREAD_ROWS;
/// Largest radius whose filter is held in registers.
const REGISTER_RADIUS: u32 = 2;
/// Blocks per SM the registers must allow (`__launch_bounds__(256, 3)`): left alone, LLVM's
/// schedule keeps more registers live at V = 8 than nvcc's, two blocks per SM where nvcc's has
/// three (measured on the H200: docs/perf-log.md, change 6).
pub const BLOCKS_PER_SM: u32 = 3;

shared_memory! {
    /// The input tile with its halo for 4 outputs per thread (sized for 7×7 filters).
    pub struct TileV4 {
        pub input: SharedMatrix<f32> = MatrixLayout::dense(THREAD_ROWS * 4 + 2 * MAX_RADIUS, WIDTH + 2 * MAX_RADIUS),
    }
}

shared_memory! {
    /// The input tile with its halo for 8 outputs per thread (sized for 7×7 filters).
    pub struct TileV8 {
        pub input: SharedMatrix<f32> = MatrixLayout::dense(THREAD_ROWS * 8 + 2 * MAX_RADIUS, WIDTH + 2 * MAX_RADIUS),
    }
}

/// What one thread's strip reads: the staged tile, where its window starts, and the filter (in
/// registers up to 5×5, else in global memory).
struct Window<'a> {
    input: SharedMatrix<f32>,
    /// The strip's first output row within the block's tile.
    first: u32,
    tx: u32,
    weights: &'a [[f32; 5]; 5],
    filter: GlobalSlice<f32>,
}

impl Window<'_> {
    /// Filter weight (i, j).
    ///
    /// # Safety
    /// i, j < 2R + 1.
    #[inline(always)]
    unsafe fn weight<const R: u32>(&self, i: u32, j: u32) -> f32 {
        if R <= REGISTER_RADIUS {
            self.weights[i as usize][j as usize]
        } else {
            // SAFETY: inside the filter, by the caller's promise.
            unsafe { self.filter.get_unchecked(i * (2 * R + 1) + j) }
        }
    }

    /// Input row `r` of the thread's window feeds every output in `outputs` it is a row of the
    /// window of: output o through filter row r - o. A function, not a closure, and always inlined: called
    /// 14 times written out, a closure was left out of line and its captures went through local
    /// memory (256 bytes of stack at V = 8, and 7×7 far slower: docs/perf-log.md, change 8).
    ///
    /// # Safety
    /// r < V + 2R; the tile holds the window (see `strip_body`).
    #[inline(always)]
    unsafe fn input_row<const V: u32, const R: u32>(&self, r: u32, outputs: (u32, u32), sums: &mut [f32; 8]) {
        let side = 2 * R + 1;
        let mut values = [0.0f32; 7];
        unrolled::<7>(|j| {
            if j < side {
                // SAFETY: first + r < 8V + 2R and tx + j < 32 + 2R.
                values[j as usize] = unsafe { self.input.get_unchecked(self.first + r, self.tx + j) };
            }
        });
        unrolled::<8>(|o| {
            if o < V && outputs.0 <= o && o < outputs.1 && r >= o && r - o < side {
                unrolled::<7>(|j| {
                    if j < side {
                        let sum = &mut sums[o as usize];
                        // SAFETY: r - o < side and j < side.
                        *sum = fma(unsafe { self.weight::<R>(r - o, j) }, values[j as usize], *sum);
                    }
                })
            }
        });
    }
}

/// The block's 32 × 8V outputs for radius R: thread (x, y) computes rows yV .. yV + V of column x.
///
/// # Safety
/// The arrays hold what the problem needs; the block is 32×8 threads; `input` has at least
/// 8V + 2R rows and 32 + 2R columns; R ≤ MAX_RADIUS.
#[inline(always)]
unsafe fn strip_body<const V: u32, const R: u32>(
    input: SharedMatrix<f32>,
    image: GlobalSlice<f32>,
    filter: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    (height, width): (u32, u32),
) {
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let t = ty * WIDTH + tx;
    let side = 2 * R + 1;
    let (tall, wide) = (THREAD_ROWS * V + 2 * R, WIDTH + 2 * R);
    let (y0, x0) = (block_idx().y * THREAD_ROWS * V, block_idx().x * WIDTH);
    // The filter, in registers up to 5×5: every thread reads the same values, which the L1
    // broadcasts. A 7×7 filter's 49 would not fit beside the rest in the registers three blocks
    // per SM leave, so it is read where it is used (from the L1). Every loop over the filter and
    // the strip is written out (`unrolled`, with the bounds of the largest filter and tests on
    // constants that fold away), so that every index is a constant and the arrays stay in
    // registers.
    let mut weights = [[0.0f32; 5]; 5];
    if R <= REGISTER_RADIUS {
        unrolled::<5>(|i| {
            unrolled::<5>(|j| {
                if i < side && j < side {
                    // SAFETY: the filter has side² values.
                    weights[i as usize][j as usize] = unsafe { filter.get_unchecked(i * side + j) };
                }
            })
        });
    }
    let mut i = t;
    while i < tall * wide {
        let (r, c) = (i / wide, i % wide);
        let (row, col) = ((y0 + r).wrapping_sub(R), (x0 + c).wrapping_sub(R));
        let value = if row < height && col < width {
            // SAFETY: inside the image.
            unsafe { image.get_unchecked(row * width + col) }
        } else {
            0.0
        };
        // SAFETY: r < tall and c < wide, inside `input`.
        unsafe { input.set_unchecked(r, c, value) };
        i += THREADS;
    }
    // Every pixel of the tile is staged before any thread reads its neighbours'.
    sync_threads();
    let window = Window {
        input,
        first: ty * V,
        tx,
        weights: &weights,
        filter,
    };
    let mut sums = [0.0f32; 8];
    if R <= REGISTER_RADIUS {
        unrolled::<{ 8 + 2 * REGISTER_RADIUS }>(|r| {
            if r < V + 2 * R {
                // SAFETY: r < V + 2R (the caller's promises cover the rest).
                unsafe { window.input_row::<V, R>(r, (0, V), &mut sums) }
            }
        });
    } else {
        // 7×7: four outputs at a time, their ten input rows one at a time. All three radii share
        // one kernel and so one register count, which the largest path sets: written out, the 7×7
        // rows' 49 filter loads were hoisted together (110 registers at V = 4, 80 and spills at
        // V = 8); rolled over all 14 rows of V = 8, 79 registers; four outputs at a time, what V = 4
        // needs (docs/perf-log.md, changes 7 and 8).
        let mut low = 0;
        while low < V {
            let mut r = low;
            while r < low + 4 + 2 * R {
                // SAFETY: r < V + 2R.
                unsafe { window.input_row::<V, R>(r, (low, low + 4), &mut sums) };
                r += 1;
            }
            low += 4;
        }
    }
    let first = ty * V;
    unrolled::<8>(|o| {
        let (y, x) = (y0 + first + o, x0 + tx);
        if o < V && y < height && x < width {
            // SAFETY: inside the output.
            unsafe { output.set_unchecked(y * width + x, sums[o as usize]) };
        }
    });
}

kernel! {
    #[launch_bounds(Dim3::xy(WIDTH, THREAD_ROWS), BLOCKS_PER_SM)]
    /// Register-blocked convolution, 4 outputs per thread: 32×32 outputs per block.
    pub unsafe fn conv2d_blocked_v4(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let TileV4 { input } = TileV4::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_V4 launches 32×8 threads.
        unsafe { with_radius!(radius, strip_body::<4>(input, image, filter, output, (height, width))) }
    }
}

kernel! {
    #[launch_bounds(Dim3::xy(WIDTH, THREAD_ROWS), BLOCKS_PER_SM)]
    /// Register-blocked convolution, 8 outputs per thread: 32×64 outputs per block.
    pub unsafe fn conv2d_blocked_v8(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let TileV8 { input } = TileV8::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_V8 launches 32×8 threads.
        unsafe { with_radius!(radius, strip_body::<8>(input, image, filter, output, (height, width))) }
    }
}

/// 32×8 threads, 32×32 outputs per block.
pub const KERNEL_V4: Kernel<Conv2d> = Kernel {
    code: conv2d_blocked_v4,
    block: Dim3::xy(WIDTH, THREAD_ROWS),
    shared: SharedMemory::of(TileV4::BYTES),
    grid: |p, _| Dim3::xy(p.width.div_ceil(WIDTH), p.height.div_ceil(THREAD_ROWS * 4)),
};

/// 32×8 threads, 32×64 outputs per block.
pub const KERNEL_V8: Kernel<Conv2d> = Kernel {
    code: conv2d_blocked_v8,
    block: Dim3::xy(WIDTH, THREAD_ROWS),
    shared: SharedMemory::of(TileV8::BYTES),
    grid: |p, _| Dim3::xy(p.width.div_ceil(WIDTH), p.height.div_ceil(THREAD_ROWS * 8)),
};
