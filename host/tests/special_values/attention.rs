//! Attention: NaN and infinities in Q, K and V, subnormals and signed zeros, scores large enough
//! that the softmax is nearly one-hot, every key and causal.

use crate::prelude::*;
use kernels::attention::{ANY_DIM_CAUSAL_FAMILY, ANY_DIM_FAMILY, Attention, CAUSAL_FAMILY, DIMS, FAMILY};
use kernels_host::families::attention;
use kernels_host::families::attention_oracle::{AttentionOracle, Geometry};
use ptxkit::device::mma::Bf16;

/// The special case each head of the input shows.
const HEADS: [&str; 9] = [
    "plain",
    "a NaN in one query row",
    "a +inf in one query row",
    "a NaN in one key",
    "a -inf in one key",
    "a NaN, a +inf and a -inf in V",
    "subnormals and signed zeros in Q and K, only those in V",
    "one query row 64 times larger",
    "every special value mixed into V",
];

/// Q, K and V (`[heads][seq][dim]`, bf16 values as f32) with head h showing case `HEADS[h]`.
fn special_heads(rng: &mut StdRng, seq: usize, dim: usize) -> [Vec<f32>; 3] {
    let head = seq * dim;
    let mut random = |gain: f32| -> Vec<f32> {
        (0..HEADS.len() * head)
            .map(|_| gain * rng.random_range(-1.0f32..1.0))
            .collect()
    };
    let (mut q, mut k, mut v) = (random(2.0), random(1.0), random(1.0));
    let at = |rng: &mut StdRng, h: usize| h * head + rng.random_range(0..head);
    let row_of = |rng: &mut StdRng, h: usize| h * head + rng.random_range(0..seq) * dim;
    q[at(rng, 1)] = f32::NAN;
    q[at(rng, 2)] = f32::INFINITY;
    k[at(rng, 3)] = f32::NAN;
    k[at(rng, 4)] = f32::NEG_INFINITY;
    for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        v[at(rng, 5)] = special;
    }
    let tiny = [0.0, -0.0, f32::from_bits(1 << 16), -1.0e-39, f32::MIN_POSITIVE];
    for values in [&mut q, &mut k] {
        mix_in(rng, &mut values[6 * head..7 * head], 3, &tiny);
    }
    // Every output of the head subnormal or zero: a flush to zero would show.
    mix_in(rng, &mut v[6 * head..7 * head], 1, &tiny);
    let large = row_of(rng, 7);
    q[large..large + dim].iter_mut().for_each(|x| *x *= 64.0);
    mix_in(rng, &mut v[8 * head..9 * head], 40, &SPECIAL_VALUES);
    // The kernels read bf16: the reference gets exactly the values they read.
    [q, k, v].map(|values| values.into_iter().map(|x| Bf16::from_f32(x).to_f32()).collect())
}

/// Every attention kernel that runs on `backend`, every key and causal, at sequences across one
/// tile of keys and past it, both head dimensions (and 40 and 96 for the any-dimension kernels),
/// a KV head per query head and one per three, on
/// [`special_heads`]: each output is NaN, an
/// infinity or within the f64 reference's bound as [`AttentionOracle`] says IEEE arithmetic has it.
pub(crate) fn attention_meets_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for (seq, dim) in [(1, 64), (33, 128), (130, 64), (33, 40), (130, 96)] {
        let mut rng = StdRng::seed_from_u64(stream ^ (seq * 1000 + dim) as u64);
        let [q, k, v] = special_heads(&mut rng, seq, dim);
        let bits = |values: &[f32]| -> Vec<u16> { values.iter().map(|&x| Bf16::from_f32(x).0).collect() };
        // Grouped heads: K and V of the cases of heads 2, 5 and 8 (their V's specials), each
        // shared by three query heads.
        let grouped = |values: &[f32]| -> Vec<f32> {
            [2, 5, 8]
                .iter()
                .flat_map(|h| values[h * seq * dim..(h + 1) * seq * dim].to_vec())
                .collect()
        };
        let (k3, v3) = (grouped(&k), grouped(&v));
        for (kv_group, k, v) in [(1, &k, &v), (3, &k3, &v3)] {
            let problem = Attention::any_dim(HEADS.len(), kv_group, seq, dim).unwrap();
            let inputs = [&q, k, v].map(|values| Buffer::upload(backend, &bits(values)).unwrap());
            let families = if DIMS.contains(&(dim as u32)) {
                [(&FAMILY, false), (&CAUSAL_FAMILY, true)]
            } else {
                [(&ANY_DIM_FAMILY, false), (&ANY_DIM_CAUSAL_FAMILY, true)]
            };
            for (family, causal) in families {
                let oracle = AttentionOracle::new(Geometry::of_attention(problem, causal), (&q, k, v), stream);
                for kernel in family.kernels {
                    if !runs_here(backend, &kernel.info(family.name), Source::Rust) {
                        continue;
                    }
                    let label = format!(
                        "{} at seq {seq}, dim {dim}, {kv_group} query heads per KV head",
                        kernel.entry()
                    );
                    let mut o = Buffer::upload(backend, &vec![0x7fbau16; problem.len()]).unwrap();
                    let [qb, kb, vb] = &inputs;
                    if let Err(e) = attention::launch(backend, kernel, Source::Rust, &problem, (qb, kb, vb), &mut o) {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                    if let Err(e) = oracle.check(&o.read(backend).unwrap()) {
                        failures.push(format!("{label}: {e}"));
                    }
                }
            }
        }
    }
    let heads: Vec<String> = HEADS
        .iter()
        .enumerate()
        .map(|(h, case)| format!("head {h}: {case}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures (random stream {stream}; rerun with {RNG_ENV}={stream}; {}):\n{}",
        failures.len(),
        heads.join(", "),
        failures.join("\n")
    );
}
