//! Naive matmul: one thread per element of C, reading a row of A and a column of B from global memory.

use super::Matmul;
use ptxkit::device::{block_dim, block_idx, fma, global_store, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// Threads per block along x (columns of C) and y (rows of C).
pub const BLOCK_SIDE: u32 = 16;

kernel! {
    /// `c[row][col] = Σ_i a[row][i] · b[i][col]`: thread (x, y) of block (bx, by) computes
    /// `row = by·16 + y`, `col = bx·16 + x`. Consecutive threads of a warp read consecutive elements
    /// of B's row (coalesced) and the same element of A (a broadcast).
    pub unsafe fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let row = block_idx().y * block_dim().y + thread_idx().y;
        let col = block_idx().x * block_dim().x + thread_idx().x;
        if row < m && col < n {
            let mut sum = 0.0f32;
            for i in 0..k {
                // SAFETY: row < m, i < k, col < n; the caller gives m·k, k·n and m·n elements.
                let (x, y) = unsafe { (*a.add((row * k + i) as usize), *b.add((i * n + col) as usize)) };
                sum = fma(x, y, sum);
            }
            // SAFETY: as above.
            unsafe { global_store(c.add((row * n + col) as usize), sum) };
        }
    }
}

/// 16×16 threads per block, one per element of C.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_naive,
    block: Dim3::xy(BLOCK_SIDE, BLOCK_SIDE),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::xy(p.n.div_ceil(BLOCK_SIDE), p.m.div_ceil(BLOCK_SIDE)),
};
