//! `out[i] = a[i] + b[i]`: the memory-bound baseline, one element per thread (the seed's kernel,
//! here), and [`vectorized`]: 16-byte accesses, two per array in flight per thread.

pub mod vectorized;

use crate::elementwise::Elementwise;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_dim, block_idx, thread_idx};
use ptxkit::{Dim3, Family, Kernel, SharedMemory, kernel};

/// Threads per block.
pub const BLOCK: u32 = 256;

kernel! {
    /// `out[i] = a[i] + b[i]` for `i < n`; thread `i` of the grid computes element `i`.
    pub unsafe fn vec_add(a: GlobalSlice<f32>, b: GlobalSlice<f32>, out: GlobalSliceMut<f32>, n: u32) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i < n {
            let i = i as usize;
            // SAFETY: i < n, and the caller gives n elements in each view.
            unsafe { out.at_unchecked(i).set(a.get_unchecked(i) + b.get_unchecked(i)) };
        }
    }
}

/// One thread per element, [`BLOCK`] threads per block.
pub const KERNEL: Kernel<Elementwise> = Kernel {
    code: vec_add,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.n.div_ceil(BLOCK)),
};

/// `out = a + b`: the registry's list of its kernels.
pub const FAMILY: Family<Elementwise> = Family::new("vec_add", &[KERNEL, vectorized::KERNEL]);
