//! Rung 2: the maximum and the sum in one read: each thread keeps a running maximum and the sum of
//! e^(x − running maximum), rescaling the sum whenever the maximum grows; the threads' pairs are
//! merged the same way. Then the outputs: two reads of the row.

use super::{Running, Softmax, THREADS, WARPS, block_running, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, exp, thread_idx};
use ptxkit::{Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One running pair per warp.
    pub struct Pairs {
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
    }
}

/// The softmax of row `row` by the whole block of `T` threads (`N` warps), two reads of it; `maxes`
/// and `sums` hold at least `N` elements each.
///
/// # Safety
/// `input` and `output` hold the row; the block has `T` = 32·`N` threads, all calling this.
#[inline(always)]
pub(super) unsafe fn online_row<const T: u32, const N: u32>(
    (maxes, sums): (SharedSlice<f32>, SharedSlice<f32>),
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    row: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let base = row as usize * cols as usize;
    let at = |c: u32| base + c as usize;
    let mut running = Running::EMPTY;
    let mut c = t;
    while c < cols {
        // SAFETY (reads and writes below): c < cols, inside the row.
        running = running.see(unsafe { input.get_unchecked(at(c)) });
        c += T;
    }
    // SAFETY: the block has 32·N threads.
    let stats = unsafe { block_running::<N>(maxes, sums, running) };
    let mut c = t;
    while c < cols {
        unsafe {
            output
                .at_unchecked(at(c))
                .set(exp(input.get_unchecked(at(c)) - stats.max) / stats.sum)
        };
        c += T;
    }
}

kernel! {
    /// Block r: the softmax of row r.
    pub unsafe fn softmax_online(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Pairs { maxes, sums } = Pairs::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, block_idx().x, cols) }
    }
}

/// One block of 256 threads per row.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_online,
    block: ptxkit::Dim3::x(THREADS),
    shared: SharedMemory::of(Pairs::BYTES),
    grid,
};
