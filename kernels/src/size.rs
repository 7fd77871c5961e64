//! Problem sizes as the kernels' 32-bit indices see them: the checks every family's `new` makes.

/// `n` elements of `problem` (its parameter `parameter`) as the kernels' 32-bit count: at least 1,
/// at most u32::MAX.
pub fn element_count(problem: &'static str, parameter: &str, n: usize) -> Result<u32, ptxkit::InvalidSize> {
    let invalid = |reason: String| ptxkit::InvalidSize { problem, reason };
    if n == 0 {
        return Err(invalid(format!("{parameter} must be at least 1 (got 0)")));
    }
    u32::try_from(n).map_err(|_| {
        invalid(format!(
            "{parameter} = {n} is beyond the kernels' 32-bit index range (at most {} elements)",
            u32::MAX
        ))
    })
}

/// A `rows × cols` matrix of `problem` as the kernels' 32-bit extents: at least one row and column,
/// every element within the kernels' 32-bit index range.
pub fn rows_and_cols(problem: &'static str, rows: usize, cols: usize) -> Result<(u32, u32), ptxkit::InvalidSize> {
    let invalid = |reason: String| ptxkit::InvalidSize { problem, reason };
    if rows == 0 || cols == 0 {
        return Err(invalid(format!(
            "rows and cols must be at least 1 (got {rows} × {cols})"
        )));
    }
    if !fits_u32_index(rows, cols) {
        return Err(invalid(format!(
            "{rows} × {cols} elements is beyond the kernels' 32-bit index range (at most {})",
            u32::MAX
        )));
    }
    Ok((rows as u32, cols as u32))
}

/// Whether a `rows × cols` array can be indexed with the kernels' 32-bit indices.
pub fn fits_u32_index(rows: usize, cols: usize) -> bool {
    (rows as u64)
        .checked_mul(cols as u64)
        .is_some_and(|elements| elements <= u32::MAX as u64)
}
