//! Rung 6: a grid sized from the device (at most the blocks that fit on the SMs at once), each
//! thread walking the input in 16-byte loads a grid apart, four in flight per step, into four
//! running sums; then one shuffle reduction per warp and one small tree per block. Most of the time
//! is loads, with almost no instructions besides them.

use super::{Combine, Reduce, Sum, THREADS, WARPS, block_sum};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, grid_dim, is_aligned4, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel, shared_memory};

/// Float4 loads each thread has in flight per step of its walk.
pub const LOADS_IN_FLIGHT: u32 = 4;

shared_memory! {
    /// One sum per warp.
    pub struct WarpSums {
        pub sums: SharedSlice<f32> = WARPS,
    }
}

/// This thread's share of the input combined by `O`: with g its index in the grid and T the grid's
/// threads, float4s g, g + T, g + 2T, … (four at a time while four remain), each of its four
/// lanes into its own running sum; the last n % 4 elements go to the first threads. An input that
/// is not 16-byte aligned is walked one float at a time.
///
/// # Safety
/// `input` holds n elements.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn thread_walk<O: Combine>(input: GlobalSlice<f32>, n: u32) -> f32 {
    let threads = grid_dim().x * THREADS;
    let g = block_idx().x * THREADS + thread_idx().x;
    let mut lanes = [O::IDENTITY; 4];
    if is_aligned4(input.as_ptr()) {
        let quads = n / 4;
        let mut q = g;
        // SAFETY (loads): every float4 read is below quads, inside the input, 16-byte aligned.
        while q + (LOADS_IN_FLIGHT - 1) * threads < quads {
            // Written out (`unrolled`), so that the loads stay in registers: an array walked by an
            // iterator went to local memory (160 bytes of stack in the ptxas report).
            let mut loaded = [Float4::default(); LOADS_IN_FLIGHT as usize];
            unrolled::<LOADS_IN_FLIGHT>(|k| {
                loaded[k as usize] = unsafe { input.get4_unchecked(4 * (q + k * threads) as usize) }
            });
            unrolled::<LOADS_IN_FLIGHT>(|k| add_lanes::<O>(&mut lanes, loaded[k as usize]));
            q += LOADS_IN_FLIGHT * threads;
        }
        while q < quads {
            add_lanes::<O>(&mut lanes, unsafe { input.get4_unchecked(4 * q as usize) });
            q += threads;
        }
        let tail = 4 * quads + g;
        if tail < n {
            // SAFETY: tail < n.
            lanes[0] = O::combine(lanes[0], unsafe { input.get_unchecked(tail) });
        }
    } else {
        let mut i = g;
        while i < n {
            // SAFETY: i < n.
            lanes[0] = O::combine(lanes[0], unsafe { input.get_unchecked(i) });
            i += threads;
        }
    }
    O::combine(O::combine(lanes[0], lanes[1]), O::combine(lanes[2], lanes[3]))
}

/// Each of a float4's lanes into its own running result.
#[inline(always)]
fn add_lanes<O: Combine>(lanes: &mut [f32; 4], value: Float4) {
    // Constant indices: an iterator over the lanes kept them in local memory.
    unrolled::<4>(|k| lanes[k as usize] = O::combine(lanes[k as usize], value.0[k as usize]));
}

/// Blocks for `p`: enough for a float4 per thread, at most the device's resident blocks.
pub(crate) const fn grid(p: &Reduce, _: Occupancy) -> Dim3 {
    let wanted = p.n.div_ceil(4 * THREADS);
    Dim3::x(if wanted < p.resident_blocks {
        wanted
    } else {
        p.resident_blocks
    })
}

kernel! {
    /// `output[b]` = block b's share of the sum.
    pub unsafe fn reduce_vectorized(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
        let WarpSums { sums } = WarpSums::carve();
        // SAFETY: the input holds n elements; the block has THREADS threads.
        let total = unsafe { block_sum(sums, thread_walk::<Sum>(input, n)) };
        if thread_idx().x == 0 {
            // SAFETY: the caller gives one output per block.
            unsafe { output.set_unchecked(block_idx().x, total) };
        }
    }
}

/// At most `resident_blocks` blocks of 256 threads.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_vectorized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpSums::BYTES),
    grid,
};
