//! The kernels: built to PTX by the host crate's build script, and run on ptxkit's CPU emulator
//! by this crate's tests.
#![cfg_attr(target_arch = "nvptx64", no_std)]

use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Family, Kernel, Problem, SharedMemory, kernel, shared_memory};

/// Threads per block, and how far each output reaches on either side.
pub const BLOCK: u32 = 256;
pub const RADIUS: u32 = 3;

shared_memory! {
    /// The block's elements and RADIUS more on each side (the halo).
    pub struct Tile {
        pub values: SharedSlice<f32> = BLOCK + 2 * RADIUS,
    }
}

kernel! {
    /// `out[i]` = the mean of `x[i - RADIUS ..= i + RADIUS]`, zeros past either end.
    pub unsafe fn stencil(x: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
        let Tile { values } = Tile::carve();
        let (t, first) = (thread_idx().x, block_idx().x * BLOCK);
        // Each thread stages its element; the first 2·RADIUS stage the halo too.
        let mut j = t;
        while j < BLOCK + 2 * RADIUS {
            let i = (first + j).wrapping_sub(RADIUS) as usize;
            values.set(j, if i < x.len() { x.get(i) } else { 0.0 });
            j += BLOCK;
        }
        // The whole tile is staged before any thread reads its neighbours'.
        sync_threads();
        let i = (first + t) as usize;
        if i < out.len() {
            let sum: f32 = (0..=2 * RADIUS).map(|k| values.get(t + k)).sum();
            out.set(i, sum / (2 * RADIUS + 1) as f32);
        }
    }
}

/// One stencil over `n` elements.
#[derive(Clone, Copy, Debug)]
pub struct Stencil {
    pub n: u32,
}

impl Problem for Stencil {
    /// `(x, out)`, as the kernel takes them: views of n elements each.
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>);
}

/// The stencil's launch: a block per BLOCK outputs, the tile in shared memory.
pub const KERNEL: Kernel<Stencil> = Kernel {
    code: stencil,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(BLOCK)),
};

/// Every kernel of this crate (the checks CUDA's limits get at compile time run here).
pub const FAMILY: Family<Stencil> = Family::new("stencil", &[KERNEL]);

/// The stencil in f64: what the kernel's f32 result is checked against.
#[cfg(not(target_arch = "nvptx64"))]
pub fn reference(x: &[f32]) -> Vec<f64> {
    let r = RADIUS as i64;
    let at = |i: i64| x.get(usize::try_from(i).unwrap_or(usize::MAX)).map_or(0.0, |&v| v as f64);
    (0..x.len() as i64)
        .map(|i| (i - r..=i + r).map(at).sum::<f64>() / (2 * r + 1) as f64)
        .collect()
}
