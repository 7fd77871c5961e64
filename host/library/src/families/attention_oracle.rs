//! The f64 reference of attention, and the error bound the kernels' arithmetic allows, row by row.
//!
//! For query row i of a head (keys j allowed by the mask), with s_j = q_i·k_j/√d, p_j = e^(s_j − max)
//! and l = Σ p_j, the output is O_c = Σ p_j·v_jc / l. The kernels differ from it by:
//! * each score, summed in f32 over d exact bf16 products (≤ 2·d·u·Σ|q·k|/√d) and scaled (≤ 2u|s|):
//!   a relative error of as much in its p_j, plus 2^-21 from `ex2.approx`; the running rescales
//!   multiply O and l alike and cancel;
//! * each p_j rounded to bf16 (2^-8 relative) in the numerator only;
//! * the f32 sums over the keys (≤ (seq + 64)·2u relative to Σ p_j·|v_jc| and to l);
//! * O rounded to bf16 (2^-8 relative).
//!
//! So |O_kernel − O| ≤ W·(2·ε_p + 2^-8 + 2·(seq + 64)·2u) + 2^-8·|O|, with W = Σ p_j·|v_jc| / l
//! and ε_p the largest relative error of a p_j. The sums' bounds are worst cases; the bf16
//! rounding of P dominates.

use kernels::attention::Attention;
use ptxkit::device::mma::Bf16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// f32's unit roundoff.
const U: f64 = 1.0 / (1u64 << 24) as f64;
/// bf16's unit roundoff (8 significant bits).
const U_BF16: f64 = 1.0 / 256.0;
/// Rows checked in full when a problem has more.
const SAMPLED_ROWS: usize = 1024;
/// Problems with at most this many query rows × keys × dim are checked row by row in full.
const FULL_CHECK_MAX: u64 = 1 << 26;

/// One query row's reference: the output and its allowed error, per column.
struct Row {
    head: usize,
    row: usize,
    expected: Vec<f64>,
    bound: Vec<f64>,
}

/// The reference rows of one problem: every row for small problems, a sample (with each head's
/// first and last rows among them) for large ones.
pub struct AttentionOracle {
    problem: Attention,
    rows: Vec<Row>,
    sampled: bool,
}

impl AttentionOracle {
    /// The reference for `q`, `k` and `v` (the bf16 values as f32, `[heads][seq][dim]`), with or
    /// without the causal mask; samples drawn from stream `rng`.
    pub fn new(problem: Attention, causal: bool, (q, k, v): (&[f32], &[f32], &[f32]), rng: u64) -> Self {
        let (heads, seq, dim) = (problem.heads as usize, problem.seq as usize, problem.dim as usize);
        let full = (heads * seq) as u64 * (seq * dim) as u64 <= FULL_CHECK_MAX;
        let positions: Vec<(usize, usize)> = if full {
            (0..heads).flat_map(|h| (0..seq).map(move |r| (h, r))).collect()
        } else {
            let mut rng = StdRng::seed_from_u64(rng);
            let mut positions = vec![(0, 0), (0, seq - 1), (heads - 1, 0), (heads - 1, seq - 1)];
            positions.extend((0..SAMPLED_ROWS).map(|_| (rng.random_range(0..heads), rng.random_range(0..seq))));
            positions
        };
        let rows = positions
            .into_iter()
            .map(|(head, row)| reference_row(problem, causal, (q, k, v), head, row))
            .collect();
        AttentionOracle {
            problem,
            rows,
            sampled: !full,
        }
    }

    /// Checks `o` (bf16 bits, `[heads][seq][dim]`): a summary, or the first element outside its
    /// bound.
    pub fn check(&self, o: &[u16]) -> Result<String, String> {
        let (seq, dim) = (self.problem.seq as usize, self.problem.dim as usize);
        if let Some(i) = o.iter().position(|&bits| Bf16(bits).to_f32().is_nan()) {
            let (head, rest) = (i / (seq * dim), i % (seq * dim));
            return Err(format!(
                "O[head {head}][row {}][{}] is NaN: never written, or a masked row divided by zero",
                rest / dim,
                rest % dim
            ));
        }
        let mut worst = 0.0f64;
        for Row {
            head,
            row,
            expected,
            bound,
        } in &self.rows
        {
            let at = (head * seq + row) * dim;
            for c in 0..dim {
                let got = Bf16(o[at + c]).to_f32() as f64;
                let error = (got - expected[c]).abs();
                if error > bound[c] {
                    return Err(format!(
                        "O[head {head}][row {row}][{c}] = {got}, expected {} (error {error:.3e} > bound {:.3e})",
                        expected[c], bound[c]
                    ));
                }
                worst = worst.max(error / bound[c]);
            }
        }
        let what = if self.sampled { "sampled rows" } else { "rows" };
        Ok(format!(
            "{} {what} within the bound of the f64 reference (worst at {:.0} % of it), none NaN",
            self.rows.len(),
            100.0 * worst
        ))
    }
}

/// Row `row` of head `head`: the f64 output and its bound (see the module).
fn reference_row(
    problem: Attention,
    causal: bool,
    (q, k, v): (&[f32], &[f32], &[f32]),
    head: usize,
    row: usize,
) -> Row {
    let (seq, dim) = (problem.seq as usize, problem.dim as usize);
    let base = head * seq * dim;
    let keys = if causal { row + 1 } else { seq };
    let query = &q[base + row * dim..base + (row + 1) * dim];
    let scale = 1.0 / (dim as f64).sqrt();
    let (mut scores, mut score_errors) = (Vec::with_capacity(keys), Vec::with_capacity(keys));
    for j in 0..keys {
        let key = &k[base + j * dim..base + (j + 1) * dim];
        let (dot, magnitude) = query.iter().zip(key).fold((0.0f64, 0.0f64), |(d, m), (&x, &y)| {
            let product = x as f64 * y as f64;
            (d + product, m + product.abs())
        });
        let s = dot * scale;
        scores.push(s);
        score_errors.push(2.0 * dim as f64 * U * magnitude * scale + 2.0 * U * s.abs());
    }
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let l: f64 = p.iter().sum();
    let epsilon_p = score_errors.iter().cloned().fold(0.0, f64::max) + 1.0 / (1u64 << 21) as f64;
    let sums = 2.0 * (seq as f64 + 64.0) * 2.0 * U;
    let relative = 2.0 * epsilon_p + U_BF16 + sums;
    let (mut expected, mut bound) = (vec![0.0; dim], vec![0.0; dim]);
    for c in 0..dim {
        let (mut numerator, mut weight) = (0.0f64, 0.0f64);
        for (j, &pj) in p.iter().enumerate() {
            let value = v[base + j * dim + c] as f64;
            numerator += pj * value;
            weight += pj * value.abs();
        }
        expected[c] = numerator / l;
        bound[c] = weight / l * relative + U_BF16 * expected[c].abs();
    }
    Row {
        head,
        row,
        expected,
        bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two heads of 9 keys, dim 64, random bf16 values: the oracle's own expectation, rounded to
    /// bf16, passes; the other mask, a lost value row, or an unwritten element fails.
    #[test]
    fn the_check_accepts_the_reference_and_rejects_a_dropped_key_or_a_missing_mask() {
        use rand::Rng;
        let problem = Attention::new(2, 9, 64).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let mut values = || -> Vec<f32> {
            (0..problem.len())
                .map(|_| Bf16::from_f32(rng.random_range(-1.0..1.0f32)).to_f32())
                .collect()
        };
        let (q, k, v) = (values(), values(), values());
        let rounded = |oracle: &AttentionOracle| -> Vec<u16> {
            let mut o = vec![0u16; problem.len()];
            for row in &oracle.rows {
                let at = (row.head * 9 + row.row) * 64;
                for (c, &x) in row.expected.iter().enumerate() {
                    o[at + c] = Bf16::from_f32(x as f32).0;
                }
            }
            o
        };
        for causal in [false, true] {
            let oracle = AttentionOracle::new(problem, causal, (&q, &k, &v), 1);
            oracle.check(&rounded(&oracle)).unwrap();
            // The other mask's output is wrong in every row but the last.
            let other = AttentionOracle::new(problem, !causal, (&q, &k, &v), 1);
            assert!(oracle.check(&rounded(&other)).is_err(), "causal {causal}");
        }
        // Key 8's value row lost (read as zeros, as a kernel that skipped the last tile's V):
        let mut v_dropped = v.clone();
        v_dropped[8 * 64..9 * 64].iter_mut().for_each(|x| *x = 0.0);
        let oracle = AttentionOracle::new(problem, false, (&q, &k, &v), 1);
        let dropped = AttentionOracle::new(problem, false, (&q, &k, &v_dropped), 1);
        assert!(oracle.check(&rounded(&dropped)).is_err());
        let mut unwritten = rounded(&oracle);
        unwritten[100] = 0x7fc0;
        assert!(oracle.check(&unwritten).unwrap_err().contains("NaN"));
    }
}
