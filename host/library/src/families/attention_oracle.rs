//! The f64 reference of attention, and the error bound the kernels' arithmetic allows, row by row.
//!
//! For query row i of a head (keys j allowed by the mask), with s_j = q_i·k_j/√d, p_j = e^(s_j − max)
//! and l = Σ p_j, the output is O_c = Σ p_j·v_jc / l. The kernels differ from it by:
//! * each score, summed in f32 over d exact bf16 products (≤ 2·d·u·Σ|q·k|/√d) and scaled (≤ 2u|s|):
//!   a relative error of as much in its p_j, plus 2^-21 from `ex2.approx`; the running rescales
//!   multiply O and l alike and cancel;
//! * each p_j rounded to bf16 (2^-8 relative) in the numerator only;
//! * the f32 sums over the keys (≤ (seq + 64)·2u relative to Σ p_j·|v_jc| and to l);
//! * with the keys cut into runs (flash-decoding), each run's weight 2^(l_s − m) from its
//!   log-sum-exp l_s in log2 units: its error in the exponent is l_s's rounding (|l_s|·2^-24,
//!   l_s near the row's largest scaled score), `lg2.approx`'s 2^-22 and `ex2.approx`'s 2^-22
//!   relative, a relative error ε_w of the weight, which moves O as an error of p_j does; and a
//!   few more roundings dividing and weighing the runs (4u);
//! * O rounded to bf16 (2^-8 relative).
//!
//! So |O_kernel − O| ≤ W·(2·ε_p + 2·ε_w + 2^-8 + 2·(seq + 64)·2u) + 2^-8·|O|, with
//! W = Σ p_j·|v_jc| / l and ε_p the largest relative error of a p_j. The sums' bounds are worst cases; the bf16
//! rounding of P dominates. Outputs in the subnormal range are allowed [`ABSOLUTE`] besides.
//!
//! Special values follow IEEE arithmetic as PyTorch's attention does: a row whose allowed scores
//! hold a NaN or a +∞ (a NaN or an infinity in its query, or in a key it attends to) is NaN
//! throughout; a NaN in V, or both infinities, met by a weight above zero makes that column NaN, one
//! infinity makes it that infinity. Where a weight is zero (a masked key of a tile the kernel
//! reads, a −∞ score) and meets a NaN or an infinity in V, the output may be non-finite or the
//! value without it: `0·∞` is NaN in a product that reads the key, and PyTorch's backends differ
//! there too (its math backend multiplies every weight, its flash backend skips masked tiles).
//! Where the attended |V| of a column add up past f32's largest value, the column may be an
//! infinity: the kernels sum weights of at most 1 times V before dividing by the weights' sum.

use kernels::attention::{Attention, Decode};
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
/// What an output in the subnormal range may be off by besides its relative bound: bf16's
/// smallest subnormal (its rounding there, and the f32 sums' below 2^-126).
const ABSOLUTE: f64 = 1.0 / (1u128 << 120) as f64 / (1u64 << 13) as f64;
/// Weights below this may round to zero in bf16 (a product that reads them then gives `0·∞`).
const VANISHING: f64 = 1.0e-36;

/// Where each query row's inputs lie and which keys it attends to: `query_heads` heads of `queries`
/// rows, `key_heads` heads of `keys` keys (a key head serves `query_heads / key_heads` consecutive
/// query heads), `dim` wide, `[head][row][dim]` each; with the causal mask query i attends to keys
/// 0..=i (SDPA's top-left mask; the diagonal where queries and keys are as many); `splits` runs of
/// keys weighed together (1: one pass).
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub query_heads: usize,
    pub queries: usize,
    pub key_heads: usize,
    pub keys: usize,
    pub dim: usize,
    pub causal: bool,
    pub splits: usize,
}

impl Geometry {
    /// The one-pass kernels' problem: as many queries as keys, a key head per `kv_group` query
    /// heads.
    pub fn of_attention(problem: Attention, causal: bool) -> Self {
        let (heads, seq) = (problem.heads as usize, problem.seq as usize);
        Geometry {
            query_heads: heads,
            queries: seq,
            key_heads: problem.kv_heads() as usize,
            keys: seq,
            dim: problem.dim as usize,
            causal,
            splits: 1,
        }
    }

    /// Flash-decoding's problem.
    pub fn of_decode(problem: Decode) -> Self {
        Geometry {
            query_heads: problem.kv_heads as usize * problem.group() as usize,
            queries: problem.queries as usize,
            key_heads: problem.kv_heads as usize,
            keys: problem.keys as usize,
            dim: problem.dim as usize,
            causal: problem.causal,
            splits: problem.splits as usize,
        }
    }

    /// Elements of Q and O.
    fn query_len(&self) -> usize {
        self.query_heads * self.queries * self.dim
    }

    /// Keys query `row` attends to.
    fn visible(&self, row: usize) -> usize {
        if self.causal {
            (row + 1).min(self.keys)
        } else {
            self.keys
        }
    }

    /// The first element of query head `head`'s key head in K and V.
    fn key_base(&self, head: usize) -> usize {
        head / (self.query_heads / self.key_heads) * self.keys * self.dim
    }
}

/// One query row's reference, per column: the output (NaN or an infinity where it must be
/// that), its allowed error, and whether it may be non-finite instead (see the module); and the
/// row's log-sum-exp in log2 units of the scaled scores with its bound (NaN where the row is NaN:
/// then any non-finite value).
struct Row {
    head: usize,
    row: usize,
    expected: Vec<f64>,
    bound: Vec<f64>,
    may_be_non_finite: Vec<bool>,
    lse: f64,
    lse_bound: f64,
}

/// The reference rows of one problem: every row for small problems, a sample (with each head's
/// first and last rows among them) for large ones.
pub struct AttentionOracle {
    geometry: Geometry,
    rows: Vec<Row>,
    sampled: bool,
    /// Every input finite: then no output may be NaN, checked rows or not.
    finite_inputs: bool,
}

impl AttentionOracle {
    /// The reference for `q`, `k` and `v` (the bf16 values as f32, laid out as `geometry` says);
    /// samples drawn from stream `rng`.
    pub fn new(geometry: Geometry, (q, k, v): (&[f32], &[f32], &[f32]), rng: u64) -> Self {
        let (heads, seq) = (geometry.query_heads, geometry.queries);
        let full = (heads * seq) as u64 * (geometry.keys * geometry.dim) as u64 <= FULL_CHECK_MAX;
        let positions: Vec<(usize, usize)> = if full {
            (0..heads).flat_map(|h| (0..seq).map(move |r| (h, r))).collect()
        } else {
            let mut rng = StdRng::seed_from_u64(rng);
            let mut positions = vec![(0, 0), (0, seq - 1), (heads - 1, 0), (heads - 1, seq - 1)];
            positions.extend((0..SAMPLED_ROWS).map(|_| (rng.random_range(0..heads), rng.random_range(0..seq))));
            positions
        };
        // The rows are independent: one share of them per core (the runner's suite waited minutes
        // on long KV caches one row at a time), collected in order.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let share = positions.len().div_ceil(cores).max(1);
        let rows = std::thread::scope(|scope| {
            let workers: Vec<_> = positions
                .chunks(share)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|&(head, row)| reference_row(geometry, (q, k, v), head, row))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        AttentionOracle {
            geometry,
            rows,
            sampled: !full,
            finite_inputs: [q, k, v].iter().all(|values| values.iter().all(|x| x.is_finite())),
        }
    }

    /// Checks `lse` (`[heads][queries]`, log2 units of the scaled scores, as the forward kernels
    /// write it): a summary, or the first row outside its bound.
    pub fn check_lse(&self, lse: &[f32]) -> Result<String, String> {
        let seq = self.geometry.queries;
        let mut worst = 0.0f64;
        for row in &self.rows {
            let got = lse[row.head * seq + row.row] as f64;
            let (head, at) = (row.head, row.row);
            if row.lse.is_nan() {
                if got.is_finite() {
                    return Err(format!(
                        "lse[head {head}][row {at}] = {got}, expected a non-finite value (a NaN row)"
                    ));
                }
                continue;
            }
            let error = (got - row.lse).abs();
            if error.is_nan() || error > row.lse_bound {
                return Err(format!(
                    "lse[head {head}][row {at}] = {got}, expected {} (error {error:.3e} > bound {:.3e})",
                    row.lse, row.lse_bound
                ));
            }
            worst = worst.max(error / row.lse_bound);
        }
        Ok(format!("lse within its bound (worst at {:.0} %)", 100.0 * worst))
    }

    /// Checks `o` (bf16 bits, `[heads][queries][dim]`): a summary, or the first element outside
    /// its bound.
    pub fn check(&self, o: &[u16]) -> Result<String, String> {
        let (seq, dim) = (self.geometry.queries, self.geometry.dim);
        debug_assert_eq!(o.len(), self.geometry.query_len());
        let nan = o.iter().position(|&bits| Bf16(bits).to_f32().is_nan());
        if let Some(i) = nan.filter(|_| self.finite_inputs) {
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
            may_be_non_finite,
            ..
        } in &self.rows
        {
            let at = (head * seq + row) * dim;
            for c in 0..dim {
                let got = Bf16(o[at + c]).to_f32() as f64;
                let want = expected[c];
                if !got.is_finite() && may_be_non_finite[c] {
                    continue;
                }
                if !want.is_finite() {
                    if !(got == want || got.is_nan() && want.is_nan()) {
                        return Err(format!("O[head {head}][row {row}][{c}] = {got}, expected {want}"));
                    }
                    continue;
                }
                let error = (got - want).abs();
                if error.is_nan() || error > bound[c] {
                    return Err(format!(
                        "O[head {head}][row {row}][{c}] = {got}, expected {} (error {error:.3e} > bound {:.3e})",
                        expected[c], bound[c]
                    ));
                }
                worst = worst.max(error / bound[c]);
            }
        }
        let what = if self.sampled { "sampled rows" } else { "rows" };
        let nan = if self.finite_inputs {
            ", none NaN"
        } else {
            ", NaN and infinities where IEEE's are"
        };
        Ok(format!(
            "{} {what} within the bound of the f64 reference (worst at {:.0} % of it){nan}",
            self.rows.len(),
            100.0 * worst
        ))
    }
}

/// Row `row` of head `head`: the f64 output, its log-sum-exp and their bounds (see the module).
fn reference_row(geometry: Geometry, (q, k, v): (&[f32], &[f32], &[f32]), head: usize, row: usize) -> Row {
    let (seq, dim) = (geometry.keys, geometry.dim);
    let base = geometry.key_base(head);
    let keys = geometry.visible(row);
    let at = (head * geometry.queries + row) * dim;
    let query = &q[at..at + dim];
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
    // f64::max passes over NaN: a NaN score is looked for on its own.
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if max.is_infinite() || scores.iter().any(|s| s.is_nan()) {
        return Row {
            head,
            row,
            expected: vec![f64::NAN; dim],
            bound: vec![0.0; dim],
            may_be_non_finite: vec![false; dim],
            lse: f64::NAN,
            lse_bound: 0.0,
        };
    }
    let p: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let l: f64 = p.iter().sum();
    let epsilon_p = score_errors.iter().cloned().fold(0.0, f64::max) + 1.0 / (1u64 << 21) as f64;
    let sums = 2.0 * (seq as f64 + 64.0) * 2.0 * U;
    let epsilon_w = if geometry.splits > 1 {
        let exponent = (max.abs() * std::f64::consts::LOG2_E + 1.0) * U + 1.0 / (1u64 << 22) as f64;
        std::f64::consts::LN_2 * exponent + 1.0 / (1u64 << 22) as f64 + 4.0 * U
    } else {
        0.0
    };
    let relative = 2.0 * epsilon_p + 2.0 * epsilon_w + U_BF16 + sums;
    // The kernels' lse: the largest scaled score's rounding, log2 of the f32 sum (whose relative
    // error is that of the p_j and of the sums) by `lg2.approx`, and the addition's rounding.
    let lse = (max + l.ln()) * std::f64::consts::LOG2_E;
    let lse_bound = std::f64::consts::LOG2_E * (epsilon_p + sums)
        + (1.0 + l.log2().abs()) / (1u64 << 22) as f64
        + 4.0 * U * (lse.abs() + (keys as f64).log2() + 1.0);
    // A masked key of the tile a kernel reads meets its weight, zero, in the product; and the
    // kernels sum the weights e^(s − running max) ≤ 1 times V before dividing by their sum, which
    // overflows f32 where the attended finite |V| add up past its largest value (PyTorch's math
    // backend divides first). V walked a key at a time (its rows in memory order), each column's
    // sums kept in key order.
    let mut may_be_non_finite = vec![false; dim];
    let (mut magnitude, mut numerator, mut weight) = (vec![0.0f64; dim], vec![0.0f64; dim], vec![0.0f64; dim]);
    for j in 0..seq {
        let values = &v[base + j * dim..base + (j + 1) * dim];
        if j >= keys {
            for (c, x) in values.iter().enumerate() {
                may_be_non_finite[c] |= !x.is_finite();
            }
            continue;
        }
        let pj = p[j];
        for (c, &x) in values.iter().enumerate() {
            let value = x as f64;
            if !value.is_finite() {
                if pj < VANISHING {
                    may_be_non_finite[c] = true;
                    continue;
                }
            } else {
                magnitude[c] += value.abs();
            }
            numerator[c] += pj * value;
            weight[c] += pj * value.abs();
        }
    }
    let (mut expected, mut bound) = (vec![0.0; dim], vec![0.0; dim]);
    for c in 0..dim {
        may_be_non_finite[c] |= magnitude[c] > f32::MAX as f64;
        expected[c] = numerator[c] / l;
        bound[c] = weight[c] / l * relative + U_BF16 * expected[c].abs() + ABSOLUTE;
    }
    Row {
        head,
        row,
        expected,
        bound,
        may_be_non_finite,
        lse,
        lse_bound,
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
            let oracle = AttentionOracle::new(Geometry::of_attention(problem, causal), (&q, &k, &v), 1);
            oracle.check(&rounded(&oracle)).unwrap();
            // The other mask's output is wrong in every row but the last.
            let other = AttentionOracle::new(Geometry::of_attention(problem, !causal), (&q, &k, &v), 1);
            assert!(oracle.check(&rounded(&other)).is_err(), "causal {causal}");
        }
        // Key 8's value row lost (read as zeros, as a kernel that skipped the last tile's V):
        let mut v_dropped = v.clone();
        v_dropped[8 * 64..9 * 64].iter_mut().for_each(|x| *x = 0.0);
        let oracle = AttentionOracle::new(Geometry::of_attention(problem, false), (&q, &k, &v), 1);
        let dropped = AttentionOracle::new(Geometry::of_attention(problem, false), (&q, &k, &v_dropped), 1);
        assert!(oracle.check(&rounded(&dropped)).is_err());
        let mut unwritten = rounded(&oracle);
        unwritten[100] = 0x7fc0;
        assert!(oracle.check(&unwritten).unwrap_err().contains("NaN"));
    }

    #[test]
    fn the_lse_check_accepts_the_reference_in_f32_and_rejects_the_other_mask_a_natural_log_or_a_slip() {
        use rand::Rng;
        let problem = Attention::new(2, 9, 64).unwrap();
        let mut rng = StdRng::seed_from_u64(6);
        let mut values = |gain: f32| -> Vec<f32> {
            (0..problem.len())
                .map(|_| Bf16::from_f32(gain * rng.random_range(-1.0..1.0f32)).to_f32())
                .collect()
        };
        let (q, k, v) = (values(4.0), values(1.0), values(1.0));
        let lse_of = |oracle: &AttentionOracle| -> Vec<f32> {
            let mut lse = vec![f32::NAN; 2 * 9];
            for row in &oracle.rows {
                lse[row.head * 9 + row.row] = row.lse as f32;
            }
            lse
        };
        let oracle = AttentionOracle::new(Geometry::of_attention(problem, true), (&q, &k, &v), 1);
        let lse = lse_of(&oracle);
        oracle.check_lse(&lse).unwrap();
        // Every key instead of the causal mask moves all rows but the last.
        let other = AttentionOracle::new(Geometry::of_attention(problem, false), (&q, &k, &v), 1);
        assert!(oracle.check_lse(&lse_of(&other)).is_err());
        // Natural-log units, or a slip of 2^-12 in one row, or a row never written.
        let natural: Vec<f32> = lse.iter().map(|x| x * std::f32::consts::LN_2).collect();
        assert!(oracle.check_lse(&natural).is_err());
        let mut slipped = lse.clone();
        slipped[3] += 1.0 / 4096.0;
        assert!(oracle.check_lse(&slipped).unwrap_err().contains("row 3"));
        let mut unwritten = lse;
        unwritten[10] = f32::NAN;
        assert!(oracle.check_lse(&unwritten).is_err());
    }

    /// A NaN in one query makes that row NaN and no other; an infinity in V is that column's
    /// infinity where a weight above zero meets it, and may be NaN (0·∞) where only the causal
    /// mask's zero weight does.
    #[test]
    fn special_values_are_checked_by_their_ieee_class() {
        use rand::Rng;
        let problem = Attention::new(1, 3, 64).unwrap();
        let mut rng = StdRng::seed_from_u64(6);
        let mut values = || -> Vec<f32> {
            (0..problem.len())
                .map(|_| Bf16::from_f32(rng.random_range(-1.0..1.0f32)).to_f32())
                .collect()
        };
        let (mut q, k, mut v) = (values(), values(), values());
        q[64 + 5] = f32::NAN;
        v[2 * 64 + 7] = f32::INFINITY;
        let oracle = AttentionOracle::new(Geometry::of_attention(problem, true), (&q, &k, &v), 1);
        let mut o = vec![0u16; problem.len()];
        for row in &oracle.rows {
            for (c, &x) in row.expected.iter().enumerate() {
                o[row.row * 64 + c] = Bf16::from_f32(x as f32).0;
            }
        }
        oracle.check(&o).unwrap();
        assert!(Bf16(o[64]).to_f32().is_nan() && Bf16(o[2 * 64 + 7]).to_f32() == f32::INFINITY);
        let with = |at: usize, value: f32| {
            let mut changed = o.clone();
            changed[at] = Bf16::from_f32(value).0;
            oracle.check(&changed)
        };
        // Row 0 meets key 2's infinity only through the mask: NaN is allowed there alone.
        with(7, f32::NAN).unwrap();
        assert!(with(8, f32::NAN).is_err());
        assert!(with(64, 0.5).is_err(), "row 1 must be NaN");
        assert!(with(2 * 64 + 7, 0.5).is_err(), "row 2 meets the infinity");
        assert!(with(2 * 64 + 7, f32::NAN).is_err(), "one infinity is not NaN");
    }

    /// Grouped heads read their KV head: four query heads of 3 queries over two KV heads of 5 keys
    /// give the rows that the same heads give over K and V copied per query head; the causal mask
    /// is top-left (query 0 attends to key 0 alone).
    #[test]
    fn grouped_heads_read_their_kv_head_and_the_causal_mask_is_top_left() {
        use rand::Rng;
        let (dim, queries, keys) = (64, 3, 5);
        let mut rng = StdRng::seed_from_u64(7);
        let mut values = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0f32)).collect() };
        let (q, k, v) = (
            values(4 * queries * dim),
            values(2 * keys * dim),
            values(2 * keys * dim),
        );
        let per_head = |x: &[f32]| -> Vec<f32> {
            (0..4)
                .flat_map(|h| x[h / 2 * keys * dim..(h / 2 + 1) * keys * dim].to_vec())
                .collect()
        };
        let (k4, v4) = (per_head(&k), per_head(&v));
        for causal in [false, true] {
            let geometry = |key_heads| Geometry {
                query_heads: 4,
                queries,
                key_heads,
                keys,
                dim,
                causal,
                splits: 1,
            };
            let grouped = AttentionOracle::new(geometry(2), (&q, &k, &v), 1);
            let copied = AttentionOracle::new(geometry(4), (&q, &k4, &v4), 1);
            for (a, b) in grouped.rows.iter().zip(&copied.rows) {
                assert_eq!((a.head, a.row, &a.expected), (b.head, b.row, &b.expected));
            }
        }
        // Query 0 of head 0 over key 0 alone is V's row 0.
        let causal = Geometry {
            query_heads: 4,
            queries,
            key_heads: 2,
            keys,
            dim,
            causal: true,
            splits: 1,
        };
        let oracle = AttentionOracle::new(causal, (&q, &k, &v), 1);
        for (c, &x) in oracle.rows[0].expected.iter().enumerate() {
            assert!((x - v[c] as f64).abs() < 1e-12);
        }
    }
}
