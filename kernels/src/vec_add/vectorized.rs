//! `out = a + b` in 16-byte accesses: each thread adds [`QUADS`] float4s of each array, a block
//! apart (every warp's accesses contiguous), all loads issued before any add. A quarter of the seed
//! kernel's instructions per byte and four times the bytes in flight per load; the seed's one
//! element per thread keeps too few bytes in flight to reach the copy ceiling on an H200
//! (measured: docs/perf-log.md, change 47). The last n mod 4 elements go to the grid's first
//! threads; arrays not 16-byte aligned are added one element at a time.

use crate::elementwise::Elementwise;
use ptxkit::device::{Float4, GlobalSlice, GlobalSliceMut, block_idx, grid_dim, is_aligned4, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Float4s of each array per thread.
pub const QUADS: u32 = 2;

kernel! {
    /// Block b adds float4s [b·BLOCK·QUADS, (b + 1)·BLOCK·QUADS): thread t those at t, t + BLOCK, …
    pub unsafe fn vec_add_vectorized(a: GlobalSlice<f32>, b: GlobalSlice<f32>, out: GlobalSliceMut<f32>, n: u32) {
        let t = thread_idx().x;
        let first = block_idx().x * BLOCK * QUADS + t;
        if is_aligned4(a.as_ptr()) && is_aligned4(b.as_ptr()) && is_aligned4(out.as_mut_ptr()) {
            let quads = n / 4;
            if first + (QUADS - 1) * BLOCK < quads {
                let (mut x, mut y) = ([Float4::default(); QUADS as usize], [Float4::default(); QUADS as usize]);
                // SAFETY (loads and stores): every float4 index is below quads: inside all three
                // arrays, 16-byte aligned.
                unrolled::<QUADS>(|k| {
                    let at = 4 * (first + k * BLOCK) as usize;
                    x[k as usize] = unsafe { a.get4_unchecked(at) };
                    y[k as usize] = unsafe { b.get4_unchecked(at) };
                });
                unrolled::<QUADS>(|k| {
                    let (p, q) = (x[k as usize].0, y[k as usize].0);
                    let sum = Float4([p[0] + q[0], p[1] + q[1], p[2] + q[2], p[3] + q[3]]);
                    unsafe { out.set4_unchecked(4 * (first + k * BLOCK) as usize, sum) };
                });
            } else {
                unrolled::<QUADS>(|k| {
                    let quad = first + k * BLOCK;
                    if quad < quads {
                        let at = 4 * quad as usize;
                        let (p, q) = unsafe { (a.get4_unchecked(at).0, b.get4_unchecked(at).0) };
                        let sum = Float4([p[0] + q[0], p[1] + q[1], p[2] + q[2], p[3] + q[3]]);
                        unsafe { out.set4_unchecked(at, sum) };
                    }
                });
            }
            let tail = 4 * quads + t;
            if block_idx().x == 0 && tail < n {
                // SAFETY: tail < n.
                unsafe { out.at_unchecked(tail).set(a.get_unchecked(tail) + b.get_unchecked(tail)) };
            }
        } else {
            // One element at a time, the grid striding over the array.
            let mut i = block_idx().x * BLOCK + t;
            while i < n {
                // SAFETY: i < n.
                unsafe { out.at_unchecked(i).set(a.get_unchecked(i) + b.get_unchecked(i)) };
                i += grid_dim().x * BLOCK;
            }
        }
    }
}

/// [`BLOCK`] threads per block, `BLOCK · QUADS` float4s of each array per block (at least one
/// block, for the tail of a short array).
pub const KERNEL: Kernel<Elementwise> = Kernel {
    code: vec_add_vectorized,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x((p.n / 4).div_ceil(BLOCK * QUADS).max(1)),
};
