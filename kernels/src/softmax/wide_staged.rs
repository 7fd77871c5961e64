//! Rung 6: rows past a 1024-thread block's registers, read once up to [`ON_CHIP_COLS`] columns: a
//! row up to [`REGISTER_COLS`] in registers as in [`super::wide`] (six vectors a thread), a longer
//! one held on chip, registers and shared memory ([`super::on_chip`]), GPT-2's 50257-word
//! vocabulary among them; past [`ON_CHIP_COLS`] the rest is read twice (Llama 3's 128256: 1.49
//! reads and a write, where the wide rung reads rows past 32768 columns twice).
//!
//! In registers, the register rung's statistics (the block's maximum, then e^(x − maximum) in
//! place and their sum); on chip, each thread's pair merged over the block and e^x taken again
//! for the outputs. Either way one reciprocal per row.

use super::on_chip::{Staging, THREADS, WARPS, row_on_chip};
use super::registers::row_in_registers;
use super::{Softmax, block_max, block_sum, grid, row_views};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, exp, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

pub use super::on_chip::ON_CHIP_COLS;

/// 16-byte vectors each thread holds in registers.
pub const VECTORS: u32 = super::on_chip::VECTORS;
/// Rows up to this many columns are held in registers alone.
pub const REGISTER_COLS: u32 = THREADS * 4 * VECTORS;

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// Block r: the softmax of row r, 1024 threads, rows past their registers held on chip.
    pub unsafe fn softmax_wide_staged(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Staging { staged, maxes, sums, .. } = Staging::carve();
        let row = block_idx().x;
        let base = row as usize * cols as usize;
        let views = row_views((input, output), base, cols);
        if cols <= REGISTER_COLS {
            // SAFETY: the row is inside the matrix; every thread calls both reductions.
            unsafe {
                row_in_registers::<VECTORS>(
                    views,
                    cols,
                    (thread_idx().x, THREADS),
                    |m| block_max::<WARPS>(maxes, m),
                    |s| block_sum::<WARPS>(sums, s),
                )
            };
        } else {
            // SAFETY: the row is inside the matrix; KERNEL launches THREADS threads, all here.
            unsafe {
                row_on_chip((staged, maxes, sums), views, cols, |row| {
                    let scale = 1.0 / row.sum;
                    #[inline(always)]
                    move |_, x| exp(x - row.max) * scale
                })
            };
        }
    }
}

/// One block of 1024 threads per row, alone on its SM (at most 64 registers), with 160 KiB of
/// shared memory.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_wide_staged,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Staging::BYTES),
    grid,
};
