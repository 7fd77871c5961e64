//! Rung 3: rows cut into pieces, a block per piece, for matrices of fewer rows than the device keeps
//! blocks resident (a few vocabulary-wide rows, a batch of long sequences), where a block per row
//! leaves most SMs idle. Block b takes piece b % splits of row b / splits: the row's 16-byte
//! vectors dealt out a block's worth at a time (piece p takes runs p, p + splits, …), four loads
//! in flight per thread, so that the row's blocks sweep it together as the whole-array
//! reduction's grid sweeps the array ([`crate::reduce::vectorized`]). It publishes the piece's result, then takes its row's ticket;
//! the block that takes the row's last ticket combines the row's pieces in piece order (so the
//! result's bits depend only on the input and the grid), writes the row's result and resets the
//! ticket for the next launch. Where one piece per row fills the device ([`RowReduce::splits`]
//! = 1) there are no tickets: each block writes its row's result.

use super::RowReduce;
use crate::reduce::vectorized::LOADS_IN_FLIGHT;
use crate::reduce::{Combine, Max, Sum, THREADS, WARPS, block_combine};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, grid_dim, is_aligned4, sync_threads, thread_fence,
    thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One result per warp, and whether this block took its row's last ticket.
    pub struct Scratch {
        pub sums: SharedSlice<f32> = WARPS,
        pub last: SharedSlice<u32> = 1,
    }
}

/// `i` rounded up to a multiple of 4, saturating at the top of the u32 range (where every row
/// ends before it).
const fn up_to_vector(i: u32) -> u32 {
    i.saturating_add(i.wrapping_neg() & 3)
}

/// This thread's share of row `input[lo..hi]` combined by `O`, for piece `piece` of `splits`:
/// the row's pieces interleaved a block's width apart (the row's blocks sweep it together, front
/// to back, as the whole-array reduction's grid does: contiguous pieces far apart read slower).
/// The elements before the row's first 16-byte boundary and after its last one at a time, the
/// float4s between them, four in flight per step, each lane into its own running result. An
/// input that is not 16-byte aligned is walked one float at a time.
///
/// # Safety
/// `lo ≤ hi ≤ input.len()`; `piece < splits`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn piece_walk<O: Combine>(input: GlobalSlice<f32>, (lo, hi): (u32, u32), (piece, splits): (u32, u32)) -> f32 {
    let t = piece * THREADS + thread_idx().x;
    let stride = splits * THREADS;
    let mut lanes = [O::IDENTITY; 4];
    // [first, last): the whole vectors inside the row; none where the input is not aligned.
    let (first, last) = if is_aligned4(input.as_ptr()) {
        let first = up_to_vector(lo).min(hi);
        (first, (hi & !3).max(first))
    } else {
        (hi, hi)
    };
    let mut i = lo.saturating_add(t);
    while i < first {
        // SAFETY: lo ≤ i < first ≤ hi.
        lanes[0] = O::combine(lanes[0], unsafe { input.get_unchecked(i) });
        i = i.saturating_add(stride);
    }
    let quads = (last - first) / 4;
    let mut q = t;
    // SAFETY (loads): each float4 starts at first + 4q with q < quads: inside [first, last), on a
    // 16-byte boundary of an aligned input.
    while q.saturating_add((LOADS_IN_FLIGHT - 1) * stride) < quads {
        // Written out (`unrolled`), so that the loads stay in registers, as in the whole-array walk.
        let mut loaded = [Float4::default(); LOADS_IN_FLIGHT as usize];
        unrolled::<LOADS_IN_FLIGHT>(|k| {
            loaded[k as usize] = unsafe { input.get4_unchecked(first + 4 * (q + k * stride)) }
        });
        unrolled::<LOADS_IN_FLIGHT>(|k| combine_lanes::<O>(&mut lanes, loaded[k as usize]));
        q += LOADS_IN_FLIGHT * stride;
    }
    while q < quads {
        combine_lanes::<O>(&mut lanes, unsafe { input.get4_unchecked(first + 4 * q) });
        q = q.saturating_add(stride);
    }
    let mut i = last.saturating_add(t);
    while i < hi {
        // SAFETY: last ≤ i < hi.
        lanes[0] = O::combine(lanes[0], unsafe { input.get_unchecked(i) });
        i = i.saturating_add(stride);
    }
    O::combine(O::combine(lanes[0], lanes[1]), O::combine(lanes[2], lanes[3]))
}

/// Each of a float4's lanes into its own running result.
#[inline(always)]
fn combine_lanes<O: Combine>(lanes: &mut [f32; 4], value: Float4) {
    unrolled::<4>(|k| lanes[k as usize] = O::combine(lanes[k as usize], value.0[k as usize]));
}

/// `output[r]` = row r combined by `O`, from the pieces of the grid's rows × splits blocks.
///
/// # Safety
/// `input` holds rows × cols elements and `output` rows; the grid is rows × splits blocks of
/// THREADS threads; where splits > 1, `partials` holds rows × splits floats and `tickets` rows
/// u32 that are zero.
#[inline(always)]
unsafe fn split_body<O: Combine>(
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    partials: GlobalSliceMut<f32>,
    tickets: GlobalSliceMut<u32>,
    rows: u32,
    cols: u32,
) {
    let Scratch { sums, last } = Scratch::carve();
    let t = thread_idx().x;
    let splits = grid_dim().x / rows;
    let (row, piece) = (block_idx().x / splits, block_idx().x % splits);
    let base = row * cols;
    // SAFETY: base + cols ≤ rows × cols, the input's length; piece < splits; the block has
    // THREADS threads.
    let result = unsafe { block_combine::<O>(sums, piece_walk::<O>(input, (base, base + cols), (piece, splits))) };
    // The same branch for the whole block: splits is the grid's.
    if splits == 1 {
        if t == 0 {
            // SAFETY: row < rows: one output per row.
            unsafe { output.set_unchecked(row, result) };
        }
        return;
    }
    if t == 0 {
        // SAFETY: block_idx < rows × splits, the partials' length; row < rows, the tickets'.
        unsafe {
            partials.set_unchecked(block_idx().x, result);
            thread_fence();
            let taken = tickets.at_unchecked(row).atomic_add(1);
            last.set(0, (taken == splits - 1) as u32);
        }
    }
    // The ticket's verdict is in shared memory before any thread reads it.
    sync_threads();
    if last.get(0) != 0 {
        // Every block of the row fenced its piece's result before taking its ticket.
        thread_fence();
        let mut all = O::IDENTITY;
        let mut p = t;
        while p < splits {
            // SAFETY: p < splits: one of this row's pieces, read from where its store landed.
            let value = unsafe { partials.at_unchecked(row * splits + p) }.load_relaxed();
            all = O::combine(all, value);
            p += THREADS;
        }
        // SAFETY: the block has THREADS threads; `sums` was last read before the barrier above.
        let total = unsafe { block_combine::<O>(sums, all) };
        if t == 0 {
            // SAFETY: row < rows; no block of this launch takes the row's ticket any more.
            unsafe {
                output.set_unchecked(row, total);
                tickets.at_unchecked(row).store_relaxed(0);
            }
        }
    }
}

kernel! {
    /// `output[r]` = the sum of row r, from its pieces.
    pub unsafe fn row_sum_split(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, partials: GlobalSliceMut<f32>, tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; SUM_KERNEL launches rows × splits blocks
        // of THREADS threads.
        unsafe { split_body::<Sum>(input, output, partials, tickets, rows, cols) }
    }
}

kernel! {
    /// `output[r]` = the maximum of row r, from its pieces.
    pub unsafe fn row_max_split(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, partials: GlobalSliceMut<f32>, tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; MAX_KERNEL launches rows × splits blocks
        // of THREADS threads.
        unsafe { split_body::<Max>(input, output, partials, tickets, rows, cols) }
    }
}

/// rows × [`RowReduce::splits`] blocks of 256 threads.
pub const SUM_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_sum_split,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid: |p, _| Dim3::x(p.rows * p.splits()),
};

/// As [`SUM_KERNEL`], for the maximum.
pub const MAX_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_max_split,
    ..SUM_KERNEL
};
