//! The same typed launches as [`crate::gpu`], on the CPU emulator and host slices, with the same
//! input checks.

use crate::error::Result;
use crate::gpu::MatmulVariant;
use crate::validate;

/// `out[i] = a[i] + b[i]` for `i < n`.
pub fn vec_add(a: &[f32], b: &[f32], out: &mut [f32], n: usize) -> Result<()> {
    let n = validate::elementwise(kernels::vec_add::INFO.entry, n, &[a.len(), b.len()], out.len())?;
    // SAFETY: a, b and out hold at least n elements, checked above.
    unsafe {
        kernels::vec_add::vec_add(
            &kernels::vec_add::launch_shape(n),
            a.as_ptr(),
            b.as_ptr(),
            out.as_mut_ptr(),
            n,
        )
    }?;
    Ok(())
}

/// The seed's shared-memory example (see `kernels::shared_mem_add`).
pub fn shared_mem_add(a: &[f32], b: &[f32], out: &mut [f32], n: usize) -> Result<()> {
    use kernels::shared_mem_add::{INFO, launch_shape, shared_mem_add};
    let n = validate::elementwise(INFO.entry, n, &[a.len(), b.len()], out.len())?;
    // SAFETY: as in `vec_add`.
    unsafe { shared_mem_add(&launch_shape(n), a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), n) }?;
    Ok(())
}

/// `C = A·B`, row-major, A m×k, B k×n, C m×n.
pub fn matmul(variant: MatmulVariant, a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) -> Result<()> {
    use kernels::matmul::{naive, padded, tiled};
    let (m, n, k) = validate::matmul(variant.info().entry, (m, n, k), (a.len(), b.len(), c.len()))?;
    validate::grid_rows(variant.info().entry, m, variant.block_rows())?;
    let kernel = match variant {
        MatmulVariant::Naive => naive::matmul_naive,
        MatmulVariant::Tiled => tiled::matmul_tiled,
        MatmulVariant::Padded => padded::matmul_tiled_padded,
    };
    // SAFETY: A, B and C hold m·k, k·n and m·n elements, checked above.
    unsafe {
        kernel(
            &variant.launch_shape(m, n),
            a.as_ptr(),
            b.as_ptr(),
            c.as_mut_ptr(),
            m,
            n,
            k,
        )
    }?;
    Ok(())
}
