//! Rung 3: the online maximum and sum, with the row kept in shared memory between the statistics
//! and the outputs: each element is read from global memory once and written once. Rows longer
//! than [`STAGE`] elements are read twice, as in the online rung. The row is read and written with
//! 16-byte accesses where its start is aligned.

use super::{Running, Softmax, THREADS, WARPS, block_running, grid, row_views};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, exp, is_aligned4, thread_idx, unrolled,
};
use ptxkit::{Kernel, SharedMemory, kernel, shared_memory};

/// The longest row kept in shared memory: 32 KiB of it.
pub const STAGE: u32 = 8192;

shared_memory! {
    /// The row, and one running pair per warp.
    pub struct Staging {
        pub row: SharedSlice<f32> = STAGE,
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
    }
}

kernel! {
    /// Block r: the softmax of row r.
    pub unsafe fn softmax_staged(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Staging { row, maxes, sums } = Staging::carve();
        let t = thread_idx().x;
        let base = block_idx().x as usize * cols as usize;
        let (src, dst) = row_views((input, output), base, cols);
        let staged = cols <= STAGE;
        let vector = cols.is_multiple_of(4) && is_aligned4(src.as_ptr()) && is_aligned4(dst.as_mut_ptr());
        let mut running = Running::EMPTY;
        if vector {
            let mut q = t;
            while q < cols / 4 {
                // SAFETY: float4 q is inside the row, 16-byte aligned.
                let Float4(four) = unsafe { src.get4_unchecked(4 * q as usize) };
                unrolled::<4>(|k| {
                    running = running.see(four[k as usize]);
                    if staged {
                        // SAFETY: 4q + k < cols ≤ STAGE.
                        unsafe { row.set_unchecked(4 * q + k, four[k as usize]) };
                    }
                });
                q += THREADS;
            }
        } else {
            let mut c = t;
            while c < cols {
                // SAFETY: c < cols, inside the row.
                let x = unsafe { src.get_unchecked(c as usize) };
                running = running.see(x);
                if staged {
                    // SAFETY: c < cols ≤ STAGE.
                    unsafe { row.set_unchecked(c, x) };
                }
                c += THREADS;
            }
        }
        // SAFETY: the block has THREADS threads. Each thread reads back below only what it staged
        // itself, so the staging needs no barrier of its own.
        let stats = unsafe { block_running::<WARPS>(maxes, sums, running) };
        // Captures by value: with the row's view captured by reference, LLVM ordered the vector
        // path's loads and divisions otherwise than with the raw pointer this kernel took before
        // (docs/perf-log.md, change 111).
        let value = move |c: u32| {
            // SAFETY: c < cols; staged rows hold the row, others are read again.
            let x = unsafe { if staged { row.get_unchecked(c) } else { src.get_unchecked(c as usize) } };
            exp(x - stats.max) / stats.sum
        };
        if vector {
            let mut q = t;
            while q < cols / 4 {
                let four = Float4(core::array::from_fn(|k| value(4 * q + k as u32)));
                // SAFETY: as for the loads.
                unsafe { dst.set4_unchecked(4 * q as usize, four) };
                q += THREADS;
            }
        } else {
            let mut c = t;
            while c < cols {
                // SAFETY: c < cols, inside the row.
                unsafe { dst.at_unchecked(c as usize).set(value(c)) };
                c += THREADS;
            }
        }
    }
}

/// One block of 256 threads per row; 32 KiB of shared memory for the row.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_staged,
    block: ptxkit::Dim3::x(THREADS),
    shared: SharedMemory::of(Staging::BYTES),
    grid,
};
