//! The f64 reference of attention's backward pass, and the error bound the kernels' arithmetic
//! allows, element by element.
//!
//! For query row i and key j of a head (j allowed by the mask), s_ij = q_i·k_j/√d,
//! P_ij = e^(s_ij − lse_i), dP_ij = dO_i·v_j, Δ_i = dO_i·O_i (O as given: the forward's output),
//! dS_ij = P_ij·(dP_ij − Δ_i); then dV_j = Σ_i P_ij·dO_i, dK_j = Σ_i dS_ij·q_i/√d (summed over the
//! query heads that share the KV head) and dQ_i = Σ_j dS_ij·k_j/√d. The kernels differ by:
//! * each P_ij's relative error ε_p: its score's and the row's largest score's f32 sums
//!   (2·d·u·Σ|q·k|/√d + 2u|s| each, as the forward's), `ex2.approx` and `lg2.approx` (2^-21), the
//!   lse's own rounding (4u·|lse| in log2 units);
//! * dP and Δ summed in f32 over d exact products ((d + 2)·u relative to Σ|dO·v|, Σ|dO·O|);
//! * P rounded to bf16 for dV's product and (in the keys' launch) for dS (2^-8); dS rounded to
//!   bf16 for dK's and dQ's products (2^-8);
//! * the f32 sums over the rows or keys ((seq + 64)·2u relative to the sums of magnitudes);
//! * the outputs rounded to bf16 (2^-8 relative).
//!
//! So, with e_ij = P_ij·((ε_p + 2^-7)·|dP_ij − Δ_i| + (d + 2)·u·(Σ|dO_i·v_j| + Σ|dO_i·O_i|)):
//! |dQ_ic − ref| ≤ Σ_j e_ij·|k_jc|/√d + (seq + 64)·2u·Σ_j|dS_ij·k_jc|/√d + 2^-8·|dQ_ic|, and so for
//! dK with q; |dV_jc − ref| ≤ Σ_i P_ij·|dO_ic|·(ε_p + 2^-8 + (seq + 64)·2u) + 2^-8·|dV_jc|. Each
//! bound takes 1 % more for the second-order terms, and bf16's smallest subnormal besides.

use kernels::attention::Attention;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const U: f64 = 1.0 / (1u64 << 24) as f64;
const U_BF16: f64 = 1.0 / 256.0;
/// What the second-order terms may add.
const SECOND_ORDER: f64 = 1.01;
/// bf16's smallest subnormal.
const ABSOLUTE: f64 = 1.0 / (1u128 << 120) as f64 / (1u64 << 13) as f64;
/// Problems with at most this many heads × seq² × dim are checked in full.
const FULL_CHECK_MAX: u64 = 1 << 26;
/// Rows and keys checked when a problem has more.
const SAMPLES: usize = 256;

/// One checked row of dQ, or one key's rows of dK and dV: (expected, bound) per column.
struct Checked {
    head: usize,
    row: usize,
    values: Vec<(f64, f64)>,
}

/// The reference gradients of one problem: every row and key of small problems, samples of large
/// ones (the keys' from at most two KV heads, whose rows' lse are all computed).
pub struct BackwardOracle {
    problem: Attention,
    dq: Vec<Checked>,
    dk: Vec<Checked>,
    dv: Vec<Checked>,
    sampled: bool,
}

/// The inputs as f32 (the bf16 values), `[heads][seq][dim]` (K and V over heads / kv_group).
pub struct Inputs<'a> {
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub o: &'a [f32],
    pub d_o: &'a [f32],
}

/// One head's view for the reference.
struct Head<'a> {
    dim: usize,
    seq: usize,
    causal: bool,
    scale: f64,
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    o: &'a [f32],
    d_o: &'a [f32],
}

/// One row's scores, their errors, lse and Δ.
struct RowTerms {
    lse: f64,
    /// The error of P's exponent: the row's scores' largest error, twice, and the approximations.
    epsilon_p: f64,
    delta: f64,
    delta_magnitude: f64,
}

fn dot(a: &[f32], b: &[f32]) -> (f64, f64) {
    a.iter().zip(b).fold((0.0, 0.0), |(s, m), (&x, &y)| {
        let p = x as f64 * y as f64;
        (s + p, m + p.abs())
    })
}

impl Head<'_> {
    fn row(&self, i: usize) -> &[f32] {
        &self.q[i * self.dim..(i + 1) * self.dim]
    }

    fn key(&self, j: usize) -> &[f32] {
        &self.k[j * self.dim..(j + 1) * self.dim]
    }

    fn keys(&self, i: usize) -> usize {
        if self.causal { i + 1 } else { self.seq }
    }

    fn terms(&self, i: usize) -> RowTerms {
        let (mut max, mut worst) = (f64::NEG_INFINITY, 0.0f64);
        let scores: Vec<f64> = (0..self.keys(i))
            .map(|j| {
                let (s, m) = dot(self.row(i), self.key(j));
                let s = s * self.scale;
                worst = worst.max(2.0 * self.dim as f64 * U * m * self.scale + 2.0 * U * s.abs());
                max = max.max(s);
                s
            })
            .collect();
        let lse = max + scores.iter().map(|s| (s - max).exp()).sum::<f64>().ln();
        let at = i * self.dim..(i + 1) * self.dim;
        let (delta, delta_magnitude) = dot(&self.d_o[at.clone()], &self.o[at]);
        let lse_error = 4.0 * U * (lse * std::f64::consts::LOG2_E).abs() + 1.0 / (1u64 << 21) as f64;
        RowTerms {
            lse,
            epsilon_p: 2.0 * worst + 1.0 / (1u64 << 21) as f64 + lse_error,
            delta,
            delta_magnitude,
        }
    }

    /// P_ij, dS_ij and e_ij (the error of dS, see the module).
    fn weights(&self, i: usize, j: usize, t: &RowTerms) -> (f64, f64, f64) {
        let (s, _) = dot(self.row(i), self.key(j));
        let p = (s * self.scale - t.lse).exp();
        let at = i * self.dim..(i + 1) * self.dim;
        let (dp, dp_magnitude) = dot(&self.d_o[at], &self.v[j * self.dim..(j + 1) * self.dim]);
        let error = p
            * ((t.epsilon_p + 2.0 * U_BF16) * (dp - t.delta).abs()
                + (self.dim as f64 + 2.0) * U * (dp_magnitude + t.delta_magnitude));
        (p, p * (dp - t.delta), error)
    }
}

impl BackwardOracle {
    /// The reference for `inputs` with or without the causal mask; samples from stream `rng`.
    pub fn new(problem: Attention, causal: bool, inputs: Inputs<'_>, rng: u64) -> Self {
        let (heads, seq, dim) = (problem.heads as usize, problem.seq as usize, problem.dim as usize);
        let group = problem.kv_group as usize;
        let full = heads as u64 * (seq * seq * dim) as u64 <= FULL_CHECK_MAX;
        let head_view = |h: usize| {
            let (at, kv_at) = (h * seq * dim, h / group * seq * dim);
            Head {
                dim,
                seq,
                causal,
                scale: 1.0 / (dim as f64).sqrt(),
                q: &inputs.q[at..at + seq * dim],
                k: &inputs.k[kv_at..kv_at + seq * dim],
                v: &inputs.v[kv_at..kv_at + seq * dim],
                o: &inputs.o[at..at + seq * dim],
                d_o: &inputs.d_o[at..at + seq * dim],
            }
        };
        let mut random = StdRng::seed_from_u64(rng);
        let rows: Vec<(usize, usize)> = if full {
            (0..heads).flat_map(|h| (0..seq).map(move |r| (h, r))).collect()
        } else {
            let mut picked = vec![(0, 0), (heads - 1, seq - 1)];
            picked.extend((0..SAMPLES).map(|_| (random.random_range(0..heads), random.random_range(0..seq))));
            picked
        };
        let kv_heads = heads / group;
        let keys: Vec<(usize, usize)> = if full {
            (0..kv_heads).flat_map(|h| (0..seq).map(move |r| (h, r))).collect()
        } else {
            let chosen = [0, kv_heads - 1];
            let mut picked = vec![(0, 0), (kv_heads - 1, seq - 1)];
            picked.extend((0..SAMPLES).map(|_| (chosen[random.random_range(0..2)], random.random_range(0..seq))));
            picked
        };
        let plain = 1.0 / (dim as f64).sqrt();
        let sums = (seq as f64 + 64.0) * 2.0 * U;
        let dq = rows
            .iter()
            .map(|&(h, i)| {
                let head = head_view(h);
                let t = head.terms(i);
                let mut values = vec![(0.0, 0.0); dim];
                let (mut expected, mut error, mut magnitude) = (vec![0.0; dim], vec![0.0; dim], vec![0.0; dim]);
                for j in 0..head.keys(i) {
                    let (_, ds, e) = head.weights(i, j, &t);
                    for (c, &kc) in head.key(j).iter().enumerate() {
                        expected[c] += ds * kc as f64 * plain;
                        error[c] += e * (kc as f64).abs() * plain;
                        magnitude[c] += (ds * kc as f64 * plain).abs();
                    }
                }
                for c in 0..dim {
                    let bound = error[c] + sums * magnitude[c] + U_BF16 * expected[c].abs();
                    values[c] = (expected[c], SECOND_ORDER * bound + ABSOLUTE);
                }
                Checked {
                    head: h,
                    row: i,
                    values,
                }
            })
            .collect();
        let (mut dk, mut dv) = (Vec::new(), Vec::new());
        let mut terms_of: std::collections::HashMap<usize, Vec<RowTerms>> = Default::default();
        for &(kv, j) in &keys {
            let (mut k_expected, mut k_error, mut k_magnitude) = (vec![0.0; dim], vec![0.0; dim], vec![0.0; dim]);
            let (mut v_expected, mut v_weight) = (vec![0.0; dim], vec![0.0; dim]);
            let mut v_epsilon = 0.0f64;
            for h in kv * group..(kv + 1) * group {
                let head = head_view(h);
                let terms = terms_of
                    .entry(h)
                    .or_insert_with(|| (0..seq).map(|i| head.terms(i)).collect());
                let first = if causal { j } else { 0 };
                for (i, t) in terms.iter().enumerate().skip(first) {
                    let (p, ds, e) = head.weights(i, j, t);
                    v_epsilon = v_epsilon.max(t.epsilon_p);
                    for c in 0..dim {
                        let (qc, gc) = (head.row(i)[c] as f64, head.d_o[i * dim + c] as f64);
                        k_expected[c] += ds * qc * plain;
                        k_error[c] += e * qc.abs() * plain;
                        k_magnitude[c] += (ds * qc * plain).abs();
                        v_expected[c] += p * gc;
                        v_weight[c] += p * gc.abs();
                    }
                }
            }
            dk.push(Checked {
                head: kv,
                row: j,
                values: (0..dim)
                    .map(|c| {
                        let bound = k_error[c] + sums * k_magnitude[c] + U_BF16 * k_expected[c].abs();
                        (k_expected[c], SECOND_ORDER * bound + ABSOLUTE)
                    })
                    .collect(),
            });
            dv.push(Checked {
                head: kv,
                row: j,
                values: (0..dim)
                    .map(|c| {
                        let bound = v_weight[c] * (v_epsilon + U_BF16 + sums) + U_BF16 * v_expected[c].abs();
                        (v_expected[c], SECOND_ORDER * bound + ABSOLUTE)
                    })
                    .collect(),
            });
        }
        BackwardOracle {
            problem,
            dq,
            dk,
            dv,
            sampled: !full,
        }
    }

    /// Checks dQ, dK and dV (bf16 bits as laid out): a summary, or the first element outside its
    /// bound.
    pub fn check(&self, dq: &[u16], dk: &[u16], dv: &[u16]) -> Result<String, String> {
        self.check_some(&[("dQ", dq, &self.dq), ("dK", dk, &self.dk), ("dV", dv, &self.dv)])
    }

    /// [`BackwardOracle::check`] of dK and dV alone.
    pub fn check_keys(&self, dk: &[u16], dv: &[u16]) -> Result<String, String> {
        self.check_some(&[("dK", dk, &self.dk), ("dV", dv, &self.dv)])
    }

    fn check_some(&self, gradients: &[(&str, &[u16], &Vec<Checked>)]) -> Result<String, String> {
        let (seq, dim) = (self.problem.seq as usize, self.problem.dim as usize);
        let mut worst = 0.0f64;
        for &(name, got, checked) in gradients {
            for Checked { head, row, values } in checked {
                for (c, &(want, bound)) in values.iter().enumerate() {
                    let value = ptxkit::device::mma::Bf16(got[(head * seq + row) * dim + c]).to_f32() as f64;
                    let error = (value - want).abs();
                    if error.is_nan() || error > bound {
                        return Err(format!(
                            "{name}[head {head}][row {row}][{c}] = {value}, expected {want} (error {error:.3e} > bound {bound:.3e})"
                        ));
                    }
                    worst = worst.max(error / bound);
                }
            }
        }
        let dq_rows = if gradients.iter().any(|g| g.0 == "dQ") {
            self.dq.len()
        } else {
            0
        };
        Ok(format!(
            "{} rows of dQ and {} of dK and dV{} within the bound of the f64 reference (worst at {:.0} % of it)",
            dq_rows,
            self.dk.len(),
            if self.sampled { " (sampled)" } else { "" },
            100.0 * worst
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's own gradients pass; one element of dK moved by a quarter and 0.02, or dQ
    /// of the other mask, fail.
    #[test]
    fn the_check_accepts_the_reference_and_rejects_a_perturbed_gradient() {
        let problem = Attention::new(2, 9, 64).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let mut values = || -> Vec<f32> {
            (0..problem.len())
                .map(|_| ptxkit::device::mma::Bf16::from_f32(rng.random_range(-1.0..1.0f32)).to_f32())
                .collect()
        };
        let (q, k, v, o, d_o) = (values(), values(), values(), values(), values());
        let inputs = || Inputs {
            q: &q,
            k: &k,
            v: &v,
            o: &o,
            d_o: &d_o,
        };
        let written = |oracle: &BackwardOracle, which: usize| -> Vec<u16> {
            let mut out = vec![0u16; problem.len()];
            let checked = [&oracle.dq, &oracle.dk, &oracle.dv][which];
            for Checked { head, row, values } in checked {
                for (c, &(x, _)) in values.iter().enumerate() {
                    out[(head * 9 + row) * 64 + c] = ptxkit::device::mma::Bf16::from_f32(x as f32).0;
                }
            }
            out
        };
        for causal in [false, true] {
            let oracle = BackwardOracle::new(problem, causal, inputs(), 1);
            let (dq, dk, dv) = (written(&oracle, 0), written(&oracle, 1), written(&oracle, 2));
            oracle.check(&dq, &dk, &dv).unwrap();
            let mut off = dk.clone();
            let x = ptxkit::device::mma::Bf16(off[3 * 64 + 5]).to_f32();
            off[3 * 64 + 5] = ptxkit::device::mma::Bf16::from_f32(x * 1.25 + 0.02).0;
            assert!(oracle.check(&dq, &off, &dv).is_err(), "causal {causal}");
            let other = BackwardOracle::new(problem, !causal, inputs(), 1);
            assert!(oracle.check(&written(&other, 0), &dk, &dv).is_err(), "causal {causal}");
        }
    }
}
