//! `ldmatrix`: a warp loads one, two or four 8×8 matrices of 16-bit elements from shared memory
//! straight into the tensor cores' fragment layout, one instruction where plain loads would take a
//! register's worth of shared reads per fragment. Lanes 8·j to 8·j + 7 give the addresses of matrix j's eight
//! rows (16 bytes each, 16-byte aligned); every lane then holds one 32-bit register of each matrix.
//! Without `.trans`, lane l's register of a matrix holds its row l / 4, elements 2·(l % 4) and the
//! next; with `.trans` it holds the same positions of the transposed matrix: element l / 4 of rows
//! 2·(l % 4) and the next, the lower-numbered in the low half.
//!
//! With the fragment tables of [`super::mma`]: four matrices at (rows 0–7, 8–15) × (columns 0–7,
//! 8–15) of a row-major 16×16 bf16 tile, in that order, are mma's A registers; four at (k 0–7,
//! 8–15) × (n 0–7, 8–15) of a row-major k×n tile, loaded with `.trans`, are the B registers of two
//! 16×8 tiles side by side.
//!
//! The views hold 16-bit elements in pairs, as `u32` words: a row of eight is four words.

use super::SharedMatrix;

impl SharedMatrix<u32> {
    /// `ldmatrix.sync.aligned.m8n8.xN.shared.b16` for `N` = 1, 2 or 4 matrices: this lane gives
    /// the row that starts at word `(row, col)` (lanes 0–7 matrix 0's rows, 8–15 matrix 1's, and so
    /// on; the other lanes' rows are not read) and gets its register of each matrix. Every lane of
    /// the warp calls it together.
    ///
    /// # Safety
    /// For every lane that gives a row: `row < rows`, `col + 4 ≤ cols`, and the word 16-byte
    /// aligned (`col` and the pitch multiples of 4, the matrix carved at a 16-byte offset). (The
    /// emulator checks it and fails the launch; the GPU does not.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_matrices<const N: usize>(&self, row: u32, col: u32) -> [u32; N] {
        let ptr = self.vector_at(row, col);
        // SAFETY: in bounds and aligned by the caller's promise.
        unsafe { super::backend::ldmatrix::<N>(ptr.cast(), false) }
    }

    /// As [`SharedMatrix::load_matrices`], each matrix transposed (`ldmatrix ... .trans`).
    ///
    /// # Safety
    /// As for [`SharedMatrix::load_matrices`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_matrices_trans<const N: usize>(&self, row: u32, col: u32) -> [u32; N] {
        let ptr = self.vector_at(row, col);
        // SAFETY: as above.
        unsafe { super::backend::ldmatrix::<N>(ptr.cast(), true) }
    }

    /// [`SharedMatrix::load_matrices`] of four matrices: the form the GEMM and attention rungs use.
    ///
    /// # Safety
    /// As for [`SharedMatrix::load_matrices`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_matrices_x4(&self, row: u32, col: u32) -> [u32; 4] {
        // SAFETY: forwarded.
        unsafe { self.load_matrices::<4>(row, col) }
    }

    /// [`SharedMatrix::load_matrices_trans`] of four matrices.
    ///
    /// # Safety
    /// As for [`SharedMatrix::load_matrices`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_matrices_x4_trans(&self, row: u32, col: u32) -> [u32; 4] {
        // SAFETY: forwarded.
        unsafe { self.load_matrices_trans::<4>(row, col) }
    }
}
