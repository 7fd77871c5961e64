//! Input checks shared by the GPU and emulator launches: a bad shape is an error, never a panic,
//! a hang or a wrong answer.

use crate::error::{HostError, Result};

/// Largest element count a kernel's 32-bit index covers.
pub const MAX_INDEX: u64 = u32::MAX as u64;

/// Largest `gridDim.y`: matmul puts rows of C on y.
const MAX_GRID_Y: u64 = 65_535;

fn invalid(kernel: &'static str, reason: String) -> HostError {
    HostError::InvalidInput { kernel, reason }
}

/// An element-wise kernel over `n` elements: `inputs` and `output` hold at least `n` each.
pub fn elementwise(kernel: &'static str, n: usize, inputs: &[usize], output: usize) -> Result<u32> {
    if n == 0 {
        return Err(invalid(kernel, "n must be at least 1".into()));
    }
    if n as u64 > MAX_INDEX {
        return Err(invalid(
            kernel,
            format!("n = {n} is beyond the kernel's 32-bit index range (at most {MAX_INDEX} elements)"),
        ));
    }
    for (i, &len) in inputs.iter().enumerate() {
        if len < n {
            return Err(invalid(
                kernel,
                format!("input {i} has {len} elements, fewer than n = {n}"),
            ));
        }
    }
    if output < n {
        return Err(invalid(
            kernel,
            format!("the output has {output} elements, fewer than n = {n}"),
        ));
    }
    Ok(n as u32)
}

/// A matmul of shape m×k · k×n into m×n.
pub fn matmul(
    kernel: &'static str,
    (m, n, k): (usize, usize, usize),
    (a_len, b_len, c_len): (usize, usize, usize),
) -> Result<(u32, u32, u32)> {
    if m == 0 || n == 0 || k == 0 {
        return Err(invalid(
            kernel,
            format!("m, n and k must be at least 1 (got m = {m}, n = {n}, k = {k})"),
        ));
    }
    let elements = |rows: usize, cols: usize, what: &str| -> Result<usize> {
        let count = (rows as u64)
            .checked_mul(cols as u64)
            .filter(|&c| c <= MAX_INDEX)
            .ok_or_else(|| {
                invalid(
                    kernel,
                    format!("{what} has {rows}×{cols} elements, beyond the kernel's 32-bit index range ({MAX_INDEX})"),
                )
            })?;
        Ok(count as usize)
    };
    let (a_need, b_need, c_need) = (elements(m, k, "A")?, elements(k, n, "B")?, elements(m, n, "C")?);
    for (what, len, need, shape) in [
        ("A", a_len, a_need, (m, k)),
        ("B", b_len, b_need, (k, n)),
        ("C", c_len, c_need, (m, n)),
    ] {
        if len < need {
            return Err(invalid(
                kernel,
                format!(
                    "{what} should be {}×{} = {need} elements but has {len}",
                    shape.0, shape.1
                ),
            ));
        }
    }
    Ok((m as u32, n as u32, k as u32))
}

/// `m` rows of C, `block_rows` per block, fit in the grid's y extent.
pub fn grid_rows(kernel: &'static str, m: u32, block_rows: u32) -> Result<()> {
    if (m as u64).div_ceil(block_rows as u64) > MAX_GRID_Y {
        return Err(invalid(
            kernel,
            format!(
                "m = {m} needs more than {MAX_GRID_Y} blocks along y (at most {} rows)",
                MAX_GRID_Y * block_rows as u64
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(HostError::InvalidInput { reason, .. }) => reason,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn elementwise_rejects_zero_short_buffers_and_lengths_beyond_u32() {
        assert_eq!(elementwise("k", 10, &[10, 12], 10).unwrap(), 10);
        assert!(reason(elementwise("k", 0, &[0], 0)).contains("at least 1"));
        assert!(reason(elementwise("k", 10, &[10, 9], 10)).contains("input 1 has 9"));
        assert!(reason(elementwise("k", 10, &[10], 3)).contains("output has 3"));
        assert!(reason(elementwise("k", 1 << 32, &[1 << 32], 1 << 32)).contains("32-bit index range"));
    }

    #[test]
    fn matmul_rejects_zero_dims_mismatched_buffers_and_huge_shapes() {
        assert_eq!(matmul("mm", (2, 3, 4), (8, 12, 6)).unwrap(), (2, 3, 4));
        assert!(reason(matmul("mm", (0, 3, 4), (0, 12, 0))).contains("at least 1"));
        assert!(reason(matmul("mm", (2, 3, 4), (7, 12, 6))).contains("A should be 2×4 = 8"));
        assert!(reason(matmul("mm", (2, 3, 4), (8, 12, 5))).contains("C should be 2×3 = 6"));
        assert!(reason(matmul("mm", (70_000, 70_000, 1), (70_000, 70_000, usize::MAX))).contains("32-bit"));
        assert!(grid_rows("mm", 65_535 * 32, 32).is_ok());
        assert!(reason(grid_rows("mm", 65_535 * 32 + 1, 32)).contains("blocks along y"));
    }
}
