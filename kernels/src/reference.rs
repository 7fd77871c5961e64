//! f64 CPU references for every kernel, and the comparison that states each kernel's tolerance.
//! Host-only; the tests, the host's demos and the benchmarks all check against these.

/// Unit roundoff of f32 (half an ulp at 1.0).
pub const F32_UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;

/// Expected values and, per element, the error allowed for an f32 kernel.
pub struct Expected {
    pub values: Vec<f64>,
    pub tolerance: Vec<f64>,
}

impl Expected {
    /// `len` elements, each `(value, tolerance)` from `element(i)`.
    pub fn from_fn(len: usize, element: impl Fn(usize) -> (f64, f64)) -> Expected {
        let (values, tolerance) = (0..len).map(element).unzip();
        Expected { values, tolerance }
    }
}

/// Element `i` of `a + b`, and the error allowed: one f32 rounding, so within one unit roundoff of
/// the exact sum.
pub fn vec_add_at(a: &[f32], b: &[f32], i: usize) -> (f64, f64) {
    let value = a[i] as f64 + b[i] as f64;
    (value, F32_UNIT_ROUNDOFF * value.abs())
}

/// `a[i] + b[i]` for every element.
pub fn vec_add(a: &[f32], b: &[f32]) -> Expected {
    Expected::from_fn(a.len(), |i| vec_add_at(a, b, i))
}

/// Element `i` of `shared_mem_add` with blocks of `block` threads: `s[i]` for the first thread of
/// each block, else `s[i] + s[i-1]`, where `s[i] = a[i] + b[i]`. Three roundings at most.
pub fn shared_mem_add_at(a: &[f32], b: &[f32], block: usize, i: usize) -> (f64, f64) {
    let staged = |j: usize| a[j] as f64 + b[j] as f64;
    let magnitude = |j: usize| (a[j] as f64).abs() + (b[j] as f64).abs();
    let (value, size) = if i.is_multiple_of(block) {
        (staged(i), magnitude(i))
    } else {
        (staged(i) + staged(i - 1), magnitude(i) + magnitude(i - 1))
    };
    (value, 3.0 * F32_UNIT_ROUNDOFF * size)
}

/// `shared_mem_add` for every element.
pub fn shared_mem_add(a: &[f32], b: &[f32], block: usize) -> Expected {
    Expected::from_fn(a.len(), |i| shared_mem_add_at(a, b, block, i))
}

/// Element `i` of the transpose of the row-major `rows × cols` matrix `input` (the output is
/// `cols × rows`): exact, a copy moves no bits.
pub fn transpose_at(input: &[f32], rows: usize, cols: usize, i: usize) -> (f64, f64) {
    let (out_row, out_col) = (i / rows, i % rows);
    (input[out_col * cols + out_row] as f64, 0.0)
}

/// Output pixel `i` of the zero-padded, same-size 2D cross-correlation of the row-major
/// `height × width` `image` with the `(2r+1)²` `filter` (as PyTorch's `conv2d`). A sum of
/// (2r+1)² products in any order is within about that many unit roundoffs of `Σ|w||x|`; the
/// tolerance allows (2r+1)² + 2.
pub fn conv2d_at(
    image: &[f32],
    filter: &[f32],
    (height, width, radius): (usize, usize, usize),
    i: usize,
) -> (f64, f64) {
    let (y, x) = (i / width, i % width);
    let side = 2 * radius + 1;
    let (mut value, mut magnitude) = (0.0f64, 0.0f64);
    for fy in 0..side {
        for fx in 0..side {
            let (row, col) = ((y + fy).wrapping_sub(radius), (x + fx).wrapping_sub(radius));
            if row < height && col < width {
                let product = filter[fy * side + fx] as f64 * image[row * width + col] as f64;
                value += product;
                magnitude += product.abs();
            }
        }
    }
    (value, (side * side + 2) as f64 * F32_UNIT_ROUNDOFF * magnitude)
}

/// How a matmul kernel reads its f32 operands: as they are, or as the tensor cores read tf32 (the
/// lower 13 mantissa bits dropped), or converted to tf32 by a library in a way it does not state
/// (cuBLAS's TF32 mode: rounded or truncated, each operand within 2^-10 of its value, relatively).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    F32,
    Tf32,
    Tf32Unstated,
}

impl Operands {
    /// `x` as the kernel multiplies it.
    pub fn read(self, x: f32) -> f64 {
        match self {
            Operands::F32 => x as f64,
            Operands::Tf32 => f32::from_bits(x.to_bits() & !0x1fff) as f64,
            Operands::Tf32Unstated => x as f64,
        }
    }

    /// The tolerance of an f32 dot product of length `k` of operands read this way, relative to
    /// `Σ|a·b|`: k + 2 unit roundoffs of f32 accumulation, plus, where the conversion is not
    /// known, each product's error from its two operands' (2·2^-10 + 2^-20).
    pub fn allowance(self, k: usize) -> f64 {
        let accumulation = (k as f64 + 2.0) * F32_UNIT_ROUNDOFF;
        match self {
            Operands::F32 | Operands::Tf32 => accumulation,
            Operands::Tf32Unstated => accumulation + 2.0 * 2f64.powi(-10) + 2f64.powi(-20),
        }
    }
}

/// `C = A·B` (row-major, A m×k, B k×n). An f32 dot product of length k in any order (FMA or not)
/// is within about k unit roundoffs of `Σ|a||b|`; the tolerance allows k + 2.
pub fn matmul(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Expected {
    matmul_of(a, b, (m, n, k), Operands::F32)
}

/// [`matmul`] on the operands as `operands` reads them (exact products in f64 of those values),
/// with the same tolerance: the accumulation in f32 is what remains.
pub fn matmul_of(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), operands: Operands) -> Expected {
    assert_eq!(a.len(), m * k, "A must be m×k");
    assert_eq!(b.len(), k * n, "B must be k×n");
    let mut values = vec![0.0f64; m * n];
    let mut magnitude = vec![0.0f64; m * n];
    for row in 0..m {
        for i in 0..k {
            let x = operands.read(a[row * k + i]);
            let b_row = &b[i * n..(i + 1) * n];
            let out = row * n;
            for (col, &y) in b_row.iter().enumerate() {
                let product = x * operands.read(y);
                values[out + col] += product;
                magnitude[out + col] += product.abs();
            }
        }
    }
    let allowance = operands.allowance(k);
    let tolerance = magnitude.iter().map(|s| allowance * s).collect();
    Expected { values, tolerance }
}

/// `C = A·B` at the given (row, col) positions only: for shapes whose full f64 product would take
/// too long on the CPU. Same tolerance as [`matmul`].
pub fn matmul_at(a: &[f32], b: &[f32], n: usize, k: usize, positions: &[(usize, usize)]) -> Expected {
    matmul_at_of(a, b, (n, k), positions, Operands::F32)
}

/// [`matmul_at`] on the operands as `operands` reads them.
pub fn matmul_at_of(
    a: &[f32],
    b: &[f32],
    (n, k): (usize, usize),
    positions: &[(usize, usize)],
    operands: Operands,
) -> Expected {
    let allowance = operands.allowance(k);
    let mut expected = Expected {
        values: Vec::with_capacity(positions.len()),
        tolerance: Vec::with_capacity(positions.len()),
    };
    for &(row, col) in positions {
        let (mut value, mut magnitude) = (0.0f64, 0.0f64);
        for i in 0..k {
            let product = operands.read(a[row * k + i]) * operands.read(b[i * n + col]);
            value += product;
            magnitude += product.abs();
        }
        expected.values.push(value);
        expected.tolerance.push(allowance * magnitude);
    }
    expected
}

/// What `kernels::probe::warp_probe` writes for `threads` threads (whole blocks): per thread, its
/// lane, `shfl_xor(g, 1)`, `shfl_down(g, 3)`, `shfl_up(g, 2)`, `shfl_idx(g, 5)` and its warp's sum of `g`,
/// then its warp's ballot of `g % 3 == 0`, whether its warp is even (no lane 7 of an odd warp votes
/// false then), whether some `g` of its warp is a multiple of 61, and the lanes of its warp whose
/// `g % 5` equals its own.
pub fn warp_probe(threads: u32) -> Vec<u32> {
    let mut words = Vec::with_capacity(threads as usize * crate::probe::WORDS_PER_THREAD as usize);
    for g in 0..threads {
        let lane = g % 32;
        let warp_base = g - lane;
        words.extend([
            lane,
            g ^ 1,
            if lane + 3 < 32 { g + 3 } else { g },
            if lane >= 2 { g - 2 } else { g },
            warp_base + 5,
            (warp_base..warp_base + 32).sum(),
            (0..32)
                .filter(|l| (warp_base + l) % 3 == 0)
                .fold(0, |bits, l| bits | 1 << l),
            ((warp_base / 32) % 2 == 0) as u32,
            (warp_base..warp_base + 32).any(|h| h % 61 == 0) as u32,
            (0..32)
                .filter(|l| (warp_base + l) % 5 == g % 5)
                .fold(0, |bits, l| bits | 1 << l),
        ]);
    }
    words
}

/// How a result differs from its reference.
#[derive(Debug)]
pub struct Mismatch {
    pub wrong: usize,
    pub first_index: usize,
    pub first_value: f32,
    pub first_expected: f64,
    pub max_error: f64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} elements out of tolerance; first at index {}: got {}, expected {} (largest error {:.3e}; NaN means never written)",
            self.wrong, self.first_index, self.first_value, self.first_expected, self.max_error
        )
    }
}

/// Checks `out` against `expected` element by element; NaN (an unwritten, poisoned element) fails.
pub fn check(out: &[f32], expected: &Expected) -> Result<(), Mismatch> {
    assert_eq!(out.len(), expected.values.len(), "output and reference lengths differ");
    check_each(out, |i| (expected.values[i], expected.tolerance[i]))
}

/// Checks `out[i]` against `expected(i) = (value, tolerance)` for every `i`, without storing the
/// reference: for element-wise references over large arrays.
pub fn check_each(out: &[f32], expected: impl Fn(usize) -> (f64, f64)) -> Result<(), Mismatch> {
    let mut mismatch: Option<Mismatch> = None;
    for (i, &got) in out.iter().enumerate() {
        let (want, tol) = expected(i);
        let error = (got as f64 - want).abs();
        // Written so that NaN compares as a failure.
        if error <= tol + f64::MIN_POSITIVE {
            continue;
        }
        let m = mismatch.get_or_insert(Mismatch {
            wrong: 0,
            first_index: i,
            first_value: got,
            first_expected: want,
            max_error: 0.0,
        });
        m.wrong += 1;
        m.max_error = if error.is_nan() {
            f64::NAN
        } else {
            m.max_error.max(error)
        };
    }
    mismatch.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rejects_nan_and_errors_beyond_tolerance() {
        let expected = vec_add(&[1.0, 2.0, 3.0], &[0.5, 0.25, 0.125]);
        assert!(check(&[1.5, 2.25, 3.125], &expected).is_ok());
        let nan = check(&[1.5, f32::NAN, 3.125], &expected).unwrap_err();
        assert_eq!((nan.wrong, nan.first_index), (1, 1));
        let off = check(&[1.5, 2.25, 3.126], &expected).unwrap_err();
        assert_eq!(off.first_index, 2);
    }

    #[test]
    fn matmul_reference_multiplies_rectangular_matrices() {
        // [1 2 3] · [[1, 0], [0, 1], [1, 1]] = [4, 5]
        let expected = matmul(&[1.0, 2.0, 3.0], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], 1, 2, 3);
        assert_eq!(expected.values, [4.0, 5.0]);
    }

    #[test]
    fn shared_mem_add_reference_restarts_at_each_block() {
        let expected = shared_mem_add(&[1.0, 2.0, 3.0, 4.0], &[0.0; 4], 2);
        assert_eq!(expected.values, [1.0, 3.0, 3.0, 7.0]);
    }
}
