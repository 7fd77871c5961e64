//! Rolling rows: each warp walks down a band of the image, 32V columns wide (V = 4 or 8 outputs
//! per lane: two configurations), one input row at a time. The rows travel into a small ring in shared memory with `cp.async` several rows ahead of
//! use, so every warp keeps loads in flight the whole time instead of loading a tile, waiting at a
//! barrier and computing with nothing in flight (what limits the tiled and blocked kernels: their
//! rate follows the blocks per SM, docs/perf-log.md). Each lane reads its V columns and the halo
//! around them from the ring (V/4 + 2 16-byte reads), and adds the row into every output row
//! whose window covers it: 2R+1 output rows are open at once, in registers, each closed and stored
//! once its last input row has passed. A pixel is read from global memory once per band (plus 2R
//! halo rows per band of 64) and once from shared memory; the filter sits in registers up to 5×5.
//!
//! The warps never wait for each other: a warp's ring is its own, filled and read by its lanes,
//! ordered by `sync_warp`. Zero padding costs nothing: rows and columns outside the image are
//! copied as zeros (the copies' source size). Rows whose length is not a multiple of 4 (or an
//! unaligned image) take 4-byte copies, consecutive lanes on consecutive columns.
//!
//! Measured on the H200 (docs/perf-log.md, changes 33–37 and 79–81), V = 4 at 3×3 and 5×5 on
//! 8192² (154 instructions per row step at 5×5, 100 of them FMAs) is short of warps with work
//! ready rather than of issue slots or bandwidth; V = 8 (fewer warps) is slower at every profiled
//! shape.

use super::{Conv2d, MAX_RADIUS};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, async_copy_commit, async_copy_wait, block_idx,
    fma, grid_dim, is_aligned4, lane_id, opaque, sync_threads, sync_warp, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Lanes of a warp.
const LANES: u32 = 32;
/// Warps per block, side by side: a block covers 4 × 32V columns of one band.
pub const WARPS: u32 = 4;
/// Most outputs per lane along a row (V = 4 or 8: one or two 16-byte accesses).
const MAX_V: u32 = 8;
/// Output rows per warp, at most: the band it walks down (the grid's rows of blocks split the height
/// evenly). Its 2R rows of halo are read twice (by this band and the next), 6 % more reads at 5×5.
/// Bands sized so that the grid fills whole waves measured slower (docs/perf-log.md, change 34),
/// and taller bands that make the grid one wave no faster (change 81).
pub const BAND: u32 = 64;
/// Input rows in a warp's ring at V outputs per lane: one being read while the others travel.
/// Eight at V = 4, a power of two, so that a row's slot is a mask, not a division (six, as first
/// measured, cost 11 instructions more per row of 100 FMAs: docs/perf-log.md, change 38); six at
/// V = 8, whose 127–128 registers had no room for eight (40 bytes of stack on sm_80).
const fn depth(v: u32) -> u32 {
    if v == 4 { 8 } else { 6 }
}
/// Columns of halo stored each side of a warp's 32V (R ≤ 3, four for 16-byte alignment).
const HALO: u32 = 4;
/// Largest radius whose filter is held in registers (49 weights at 7×7 would not fit beside the
/// 28 open sums): 7×7 reads its weights from shared memory at each row.
const REGISTER_RADIUS: u32 = 2;
/// Filter side padded to a multiple of 4, for 16-byte reads of a filter row.
const FILTER_PITCH: u32 = 8;
/// Largest filter side.
const MAX_SIDE: u32 = 2 * MAX_RADIUS + 1;

shared_memory! {
    /// Every warp's ring of input rows (8 rows of 128 columns and halo), and the filter.
    pub struct RingsV4 {
        pub rows: SharedMatrix<f32> = MatrixLayout::dense(WARPS * depth(4), LANES * 4 + 2 * HALO),
        pub filter: SharedMatrix<f32> = MatrixLayout::dense(MAX_SIDE, FILTER_PITCH),
    }
}

shared_memory! {
    /// The same with 6 rows of 256 columns and halo.
    pub struct RingsV8 {
        pub rows: SharedMatrix<f32> = MatrixLayout::dense(WARPS * depth(8), LANES * 8 + 2 * HALO),
        pub filter: SharedMatrix<f32> = MatrixLayout::dense(MAX_SIDE, FILTER_PITCH),
    }
}

/// One warp's walk down its band, V outputs per lane along a row.
struct Walk<const V: u32> {
    rows: SharedMatrix<f32>,
    /// The image's address: the ring's asynchronous copies take addresses, not views.
    image: *const f32,
    output: GlobalSliceMut<f32>,
    width: u32,
    /// The warp's first ring row.
    ring: u32,
    /// The warp's first column, and this lane's.
    base: u32,
    col: u32,
    lane: u32,
    /// The band's first output row and one past its last.
    first: u32,
    last: u32,
    /// One past the last input row the band copies (its last output row + R, or the image's end):
    /// rows from here on, and above the image, land as zeros.
    end: u32,
    /// The 16-byte path's copies of a row, as (column to read, floats read): the lane's V/4
    /// chunks, (0, 0) past the image's edge ([`Walk::chunk`]). Row-invariant, settled once per
    /// band, so that a row's copies only add its start.
    own: [(u32, u32); (MAX_V / 4) as usize],
}

impl<const V: u32> Walk<V> {
    /// The 16-byte chunk of a row at `col`, as (column to read, floats read): read where it
    /// lies inside the image, else (0, 0): zeros, read from the row's start.
    #[inline(always)]
    fn chunk(&self, col: u32) -> (u32, u32) {
        if col < self.width { (col, 4) } else { (0, 0) }
    }

    /// Starts copying input row `first - R + j` (zeros outside the image) into ring slot j mod
    /// depth(V): each lane its V columns, and the halos left and right.
    ///
    /// # Safety
    /// The image holds height × width floats; on the 16-byte path width is a multiple of 4 and the
    /// image 16-byte aligned.
    #[inline(always)]
    unsafe fn load<const VECTOR: bool, const R: u32>(&self, j: u32) {
        let row = (self.first + j).wrapping_sub(R);
        let slot = self.ring + j % depth(V);
        let inside = row < self.end;
        // The image row's start; the image's own start where the row is outside (nothing is read).
        let start = if inside {
            self.image.wrapping_add((row * self.width) as usize)
        } else {
            self.image
        };
        if VECTOR {
            // Four columns lie wholly inside or outside (width a multiple of 4); the columns'
            // part was settled once per band (`own`; the halo's from its column), the row's part is
            // its start.
            let copy = |at: u32, (col, valid): (u32, u32)| {
                let valid = if inside { valid } else { 0 };
                // SAFETY: `valid` floats at the row's start + col lie inside the image, 16-byte
                // aligned (col a multiple of 4; nothing is read where valid is 0); the slot's row
                // and columns at .. at + 4 lie inside the ring.
                unsafe {
                    self.rows
                        .copy4_async_zero_fill_unchecked(slot, at, start.wrapping_add(col as usize), valid)
                };
            };
            unrolled::<{ MAX_V / 4 }>(|i| {
                if i < V / 4 {
                    copy(HALO + V * self.lane + 4 * i, self.own[i as usize]);
                }
            });
            // Lane 0 copies the halo left of the warp's columns, lane 1 the halo right of them.
            if self.lane < 2 {
                let (halo_col, halo_at) = if self.lane == 0 {
                    (self.base.wrapping_sub(HALO), 0)
                } else {
                    (self.base + LANES * V, HALO + LANES * V)
                };
                copy(halo_at, self.chunk(halo_col));
            }
        } else {
            // One float per copy, consecutive lanes on consecutive columns (128 bytes per copy
            // instruction): ring column c holds image column base - HALO + c. Each copy's lane
            // through `opaque`, so that each row computes its copies' addresses again instead of
            // keeping eight of them live from the band's start (V = 8 spilled them at 7×7).
            let one = |at: u32| {
                let col = (self.base + at).wrapping_sub(HALO);
                if inside && col < self.width {
                    (start.wrapping_add(col as usize), true)
                } else {
                    (self.image, false)
                }
            };
            unrolled::<{ MAX_V }>(|q| {
                if q < V {
                    let at = HALO + opaque(self.lane) + LANES * q;
                    let (src, valid) = one(at);
                    // SAFETY: a float inside the image where valid; the slot's element inside the
                    // ring.
                    unsafe { self.rows.copy1_async_zero_fill_unchecked(slot, at, src, valid) };
                }
            });
            // Lanes 0..4 copy the halo left of the warp's columns, lanes 4..8 the halo right.
            if self.lane < 2 * HALO {
                let at = if self.lane < HALO {
                    self.lane
                } else {
                    LANES * V + self.lane
                };
                let (src, valid) = one(at);
                // SAFETY: as above.
                unsafe { self.rows.copy1_async_zero_fill_unchecked(slot, at, src, valid) };
            }
        }
    }

    /// Stores output row `o` (the lane's V columns of it, from the first V of `sums`).
    ///
    /// # Safety
    /// o < height; the output holds height × width floats (16-byte aligned on the 16-byte path,
    /// width a multiple of 4).
    #[inline(always)]
    unsafe fn store<const VECTOR: bool>(&self, o: u32, sums: [f32; MAX_V as usize]) {
        let start = self.output.tail(o * self.width);
        if VECTOR {
            unrolled::<{ MAX_V / 4 }>(|i| {
                let col = self.col + 4 * i;
                if i < V / 4 && col < self.width {
                    let at = 4 * i as usize;
                    let four = [sums[at], sums[at + 1], sums[at + 2], sums[at + 3]];
                    // SAFETY: four columns inside the output row, aligned.
                    unsafe { start.set4_unchecked(col, Float4(four)) };
                }
            });
        } else {
            unrolled::<{ MAX_V }>(|q| {
                if q < V && self.col + q < self.width {
                    // SAFETY: inside the output row.
                    unsafe { start.set_unchecked(self.col + q, sums[q as usize]) };
                }
            });
        }
    }
}

/// The band for radius R: every input row from `first - R` to `last + R - 1` once, in order.
///
/// # Safety
/// As for [`Walk::load`] and [`Walk::store`]; `filter` holds the (2R+1)² weights (rows padded to
/// FILTER_PITCH), visible to every thread.
#[inline(always)]
unsafe fn band<const VECTOR: bool, const V: u32, const R: u32>(walk: &Walk<V>, filter: SharedMatrix<f32>) {
    let side = 2 * R + 1;
    let rows_in = walk.last - walk.first + 2 * R;
    // Every loop over the filter, the open rows and a row's columns is written out with the bounds
    // of the largest filter and tests on constants that fold away, so that every index is a
    // constant and the arrays stay in registers.
    let held = if R <= REGISTER_RADIUS {
        read_filter::<R>(filter)
    } else {
        [[0.0; MAX_SIDE as usize]; MAX_SIDE as usize]
    };
    for j in 0..depth(V) - 1 {
        // SAFETY: forwarded.
        unsafe { walk.load::<VECTOR, R>(j) };
        async_copy_commit();
    }
    // 2R + 1 rows per turn, one step each, so that each row's slots are constants.
    let mut rows = Rows::<VECTOR, V, R> {
        walk,
        filter,
        held,
        rows_in,
        sums: [[0.0; MAX_V as usize]; MAX_SIDE as usize],
    };
    let mut j0 = 0;
    while j0 < rows_in {
        // SAFETY: forwarded.
        unsafe { rows.turn(j0) };
        j0 += side;
    }
    // The last steps started copies of rows past the band (zeros, never read): every copy lands
    // before the warp leaves.
    async_copy_wait::<0>();
}

/// A band's walk in progress: the open output rows and what each row step reads.
struct Rows<'a, const VECTOR: bool, const V: u32, const R: u32> {
    walk: &'a Walk<V>,
    filter: SharedMatrix<f32>,
    /// The filter, up to 5×5 (7×7 reads it from `filter` at each row, a filter row at a time).
    held: [[f32; MAX_SIDE as usize]; MAX_SIDE as usize],
    /// Input rows of the band, halos included.
    rows_in: u32,
    /// Open output rows: output o (counted from the band's first) in slot o mod (2R + 1).
    sums: [[f32; MAX_V as usize]; MAX_SIDE as usize],
}

impl<const VECTOR: bool, const V: u32, const R: u32> Rows<'_, VECTOR, V, R> {
    /// Input rows j0 .. j0 + 2R + 1, one step each, so that each row's slots are constants; a
    /// step past the band does nothing.
    ///
    /// # Safety
    /// As for [`band`].
    #[inline(always)]
    unsafe fn turn(&mut self, j0: u32) {
        // SAFETY (each step): forwarded.
        unsafe {
            self.step::<0>(j0);
            self.step::<1>(j0);
            self.step::<2>(j0);
            self.step::<3>(j0);
            self.step::<4>(j0);
            self.step::<5>(j0);
            self.step::<6>(j0);
        }
    }

    /// Input row j0 + K, the turn's K-th (none if K ≥ 2R + 1 or past the band). A function with the
    /// step as a constant, always inlined: as a closure called for each K, LLVM left it out of
    /// line, its captures in local memory (472 bytes of stack).
    ///
    /// # Safety
    /// As for [`band`].
    #[inline(always)]
    unsafe fn step<const K: u32>(&mut self, j0: u32) {
        let side = 2 * R + 1;
        let j = j0 + K;
        if K >= side || j >= self.rows_in {
            return;
        }
        // Row j has landed (this lane's copies), and every lane's copies are visible; every
        // lane has also finished reading the slot the next copy overwrites (row j - 1's).
        // (The wait's count is a constant of the instruction: one per ring depth.)
        if depth(V) == 8 {
            async_copy_wait::<6>();
        } else {
            async_copy_wait::<4>();
        }
        sync_warp();
        let slot = self.walk.ring + j % depth(V);
        // The lane's V columns and four either side: V/4 + 2 reads of 16 bytes.
        let at = V * self.walk.lane;
        let mut x = [0.0f32; MAX_V as usize + 2 * HALO as usize];
        unrolled::<{ MAX_V / 4 + 2 }>(|i| {
            if i < V / 4 + 2 {
                // SAFETY: inside the ring's row (at + V + 8 ≤ 32V + 2·HALO), 16-byte aligned.
                let four = unsafe { self.walk.rows.get4_unchecked(slot, at + 4 * i) };
                x[4 * i as usize..4 * i as usize + 4].copy_from_slice(&four.0);
            }
        });
        // Rows past the band land as zeros (`Walk::end`), with no test here at V = 4; V = 8 skips
        // them (without the test, ptxas spilled 8 bytes of its 128 registers at 7×7).
        if V == 4 || j + depth(V) - 1 < self.rows_in {
            // SAFETY: forwarded.
            unsafe { self.walk.load::<VECTOR, R>(j + depth(V) - 1) };
        }
        async_copy_commit();
        // Row j feeds output j - dy through filter row dy (the output's window starts R rows
        // above it): slot (K - dy) mod side. Filter row 0 opens the output (a product, not a sum).
        unrolled::<{ MAX_SIDE }>(|dy| {
            if dy >= side {
                return;
            }
            let open = ((K + side - dy) % side) as usize;
            // Filter row dy: held, or two 16-byte reads at 7×7.
            let w = if R <= REGISTER_RADIUS {
                self.held[dy as usize]
            } else {
                // SAFETY: row dy < 7 of the filter matrix, whose pitch (8) and offset are 16-byte
                // multiples.
                let (low, high) = unsafe { (self.filter.get4_unchecked(dy, 0), self.filter.get4_unchecked(dy, 4)) };
                let (l, h) = (low.0, high.0);
                [l[0], l[1], l[2], l[3], h[0], h[1], h[2]]
            };
            unrolled::<{ MAX_V }>(|c| {
                unrolled::<{ MAX_SIDE }>(|dx| {
                    if c < V && dx < side {
                        let value = x[(HALO - R + c + dx) as usize];
                        let weight = w[dx as usize];
                        let sum = &mut self.sums[open][c as usize];
                        *sum = if dy == 0 && dx == 0 {
                            weight * value
                        } else {
                            fma(weight, value, *sum)
                        };
                    }
                })
            });
        });
        // Row j was the last of output j - 2R's window: store it, if it is one of the band's.
        let o = (self.walk.first + j).wrapping_sub(2 * R);
        if j >= 2 * R && o < self.walk.last {
            // SAFETY: o < last ≤ height; forwarded.
            unsafe { self.walk.store::<VECTOR>(o, self.sums[((K + 1) % side) as usize]) };
        }
    }
}

/// The (2R+1)² weights from shared memory. A function, always inlined: as a closure, LLVM left it
/// out of line and returned the array through local memory (488 bytes of stack).
#[inline(always)]
fn read_filter<const R: u32>(filter: SharedMatrix<f32>) -> [[f32; MAX_SIDE as usize]; MAX_SIDE as usize] {
    let side = 2 * R + 1;
    let mut w = [[0.0f32; MAX_SIDE as usize]; MAX_SIDE as usize];
    unrolled::<{ MAX_SIDE }>(|i| {
        unrolled::<{ MAX_SIDE }>(|j| {
            if i < side && j < side {
                // SAFETY: inside the filter matrix (side ≤ MAX_SIDE ≤ FILTER_PITCH).
                w[i as usize][j as usize] = unsafe { filter.get_unchecked(i, j) };
            }
        })
    });
    w
}

/// The block's work: the filter staged, then each warp's band.
///
/// # Safety
/// The kernel's contract; the block is WARPS whole warps; `rows` has WARPS·depth(V) rows of 32V + 2·HALO
/// columns, `weights` MAX_SIDE rows of FILTER_PITCH.
#[inline(always)]
unsafe fn rolling<const V: u32>(
    (rows, weights): (SharedMatrix<f32>, SharedMatrix<f32>),
    (image, filter, output): (GlobalSlice<f32>, GlobalSlice<f32>, GlobalSliceMut<f32>),
    (height, width, radius): (u32, u32, u32),
) {
    let side = 2 * radius + 1;
    let t = thread_idx().x;
    // The whole padded matrix, zeros outside the filter: 7×7 reads filter rows 16 bytes at a time.
    if t < MAX_SIDE * FILTER_PITCH {
        let (i, j) = (t / FILTER_PITCH, t % FILTER_PITCH);
        // SAFETY: the filter holds side² weights.
        let weight = if i < side && j < side {
            unsafe { filter.get_unchecked(i * side + j) }
        } else {
            0.0
        };
        // SAFETY: (i, j) is inside the matrix.
        unsafe { weights.set_unchecked(i, j, weight) };
    }
    // The filter is staged before any thread reads it (and before any warp leaves).
    sync_threads();
    let warp = t / LANES;
    let base = (block_idx().x * WARPS + warp) * LANES * V;
    if base >= width {
        return;
    }
    let lane = lane_id();
    // The band's rows: height split evenly over the grid's rows of blocks.
    let band_rows = height.div_ceil(grid_dim().y);
    let first = block_idx().y * band_rows;
    if first >= height {
        return;
    }
    let last = height.min(first + band_rows);
    let col = base + V * lane;
    let mut walk = Walk::<V> {
        rows,
        image: image.as_ptr(),
        output,
        width,
        ring: warp * depth(V),
        base,
        col,
        lane,
        first,
        last,
        end: height.min(last + radius),
        own: [(0, 0); (MAX_V / 4) as usize],
    };
    walk.own = [walk.chunk(col), walk.chunk(col + 4)];
    let vector = width.is_multiple_of(4) && is_aligned4(image.as_ptr()) && is_aligned4(output.as_mut_ptr());
    // SAFETY: forwarded (the shape for the 16-byte path checked above).
    unsafe {
        if vector {
            with_radius!(radius, band::<true, V>(&walk, weights))
        } else {
            with_radius!(radius, band::<false, V>(&walk, weights))
        }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(WARPS * LANES), 6)]
    /// Warp w of block (x, y) convolves columns (4x + w)·128 .. + 128 of the y-th band of rows.
    pub unsafe fn conv2d_rolling_v4(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let RingsV4 { rows, filter: weights } = RingsV4::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_V4 launches WARPS warps.
        unsafe { rolling::<4>((rows, weights), (image, filter, output), (height, width, radius)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(WARPS * LANES), 4)]
    /// Warp w of block (x, y) convolves columns (4x + w)·256 .. + 256 of the y-th band of rows.
    pub unsafe fn conv2d_rolling_v8(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let RingsV8 { rows, filter: weights } = RingsV8::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL_V8 launches WARPS warps.
        unsafe { rolling::<8>((rows, weights), (image, filter, output), (height, width, radius)) }
    }
}

/// Four warps side by side per block, each walking a band of up to 64 output rows and 128 columns.
pub const KERNEL_V4: Kernel<Conv2d> = Kernel {
    code: conv2d_rolling_v4,
    block: Dim3::x(WARPS * LANES),
    shared: SharedMemory::of(RingsV4::BYTES),
    grid: |p, _| Dim3::xy(p.width.div_ceil(WARPS * LANES * 4), p.height.div_ceil(BAND)),
};

/// Four warps side by side per block, each walking a band of up to 64 output rows and 256 columns:
/// eight outputs per lane, so each row's fixed costs (the ring's wait, index and copies, the
/// store's test) are shared by twice the FMAs.
pub const KERNEL_V8: Kernel<Conv2d> = Kernel {
    code: conv2d_rolling_v8,
    block: Dim3::x(WARPS * LANES),
    shared: SharedMemory::of(RingsV8::BYTES),
    grid: |p, _| Dim3::xy(p.width.div_ceil(WARPS * LANES * 8), p.height.div_ceil(BAND)),
};
