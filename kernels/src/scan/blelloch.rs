//! Rung 2: each block scans a 512-element tile work-efficiently (Blelloch): an up-sweep builds
//! sums of ever larger blocks in place (255 + 256 additions in all), the total is replaced by 0,
//! and a down-sweep hands each block's prefix down to its halves. The strided steps would hit few
//! banks (at step 16 every lane's index is a multiple of 32); one word of padding per 32 spreads
//! them out, as the issue asks.

use super::{ADD_PREFIXES, Scan, THREADS};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Elements per tile: two per thread.
pub const TILE: u32 = 2 * THREADS;

/// Where element `i` of the tile lives: one padding word after every 32.
#[inline(always)]
const fn padded(i: u32) -> u32 {
    i + (i >> 5)
}

shared_memory! {
    /// The tile, padded.
    pub struct Tile {
        pub values: SharedSlice<f32> = padded(TILE),
    }
}

kernel! {
    /// Phase 0: `output` = each 512-element tile's scan, `scratch[tile]` = its total. Phase 1:
    /// `output[i] += scratch[tile of i]`.
    pub unsafe fn scan_blelloch(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        let t = thread_idx().x;
        let tile = block_idx().x;
        let base = tile * TILE;
        let (a, b) = (base + t, base.saturating_add(t + THREADS));
        if phase == ADD_PREFIXES {
            // SAFETY (both): below n; one prefix per tile.
            let prefix = unsafe { scratch.get_unchecked(tile) };
            for i in [a, b] {
                if i < n {
                    unsafe { output.at_unchecked(i).set(prefix + output.get_unchecked(i)) };
                }
            }
            return;
        }
        let Tile { values } = Tile::carve();
        // SAFETY: read only below n.
        let (x_a, x_b) = unsafe {
            (
                if a < n { input.get_unchecked(a) } else { 0.0 },
                if b < n { input.get_unchecked(b) } else { 0.0 },
            )
        };
        // SAFETY (shared accesses below): every index is below TILE before padding.
        unsafe {
            values.set_unchecked(padded(t), x_a);
            values.set_unchecked(padded(t + THREADS), x_b);
        }
        let mut offset = 1;
        let mut d = THREADS;
        while d > 0 {
            // The level below is complete before this one adds its pairs.
            sync_threads();
            if t < d {
                let (left, right) = (offset * (2 * t + 1) - 1, offset * (2 * t + 2) - 1);
                unsafe {
                    let sum = values.get_unchecked(padded(left)) + values.get_unchecked(padded(right));
                    values.set_unchecked(padded(right), sum);
                }
            }
            offset *= 2;
            d /= 2;
        }
        if t == 0 {
            // Thread 0 wrote the total itself at the last level.
            let last = padded(TILE - 1);
            unsafe {
                scratch.at_unchecked(tile).set(values.get_unchecked(last));
                values.set_unchecked(last, 0.0);
            }
        }
        let mut d = 1;
        while d < TILE {
            offset /= 2;
            // The level above has handed its prefixes down before this one reads them.
            sync_threads();
            if t < d {
                let (left, right) = (offset * (2 * t + 1) - 1, offset * (2 * t + 2) - 1);
                unsafe {
                    let (l, r) = (values.get_unchecked(padded(left)), values.get_unchecked(padded(right)));
                    values.set_unchecked(padded(left), r);
                    values.set_unchecked(padded(right), l + r);
                }
            }
            d *= 2;
        }
        // Every prefix is in place before threads read them.
        sync_threads();
        let (e_a, e_b) = unsafe { (values.get_unchecked(padded(t)), values.get_unchecked(padded(t + THREADS))) };
        let (r_a, r_b) = if exclusive == 0 { (e_a + x_a, e_b + x_b) } else { (e_a, e_b) };
        // SAFETY: below n.
        unsafe {
            if a < n {
                output.set_unchecked(a, r_a);
            }
            if b < n {
                output.set_unchecked(b, r_b);
            }
        }
    }
}

/// One block per 512 elements.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_blelloch,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(TILE)),
};
