//! Decoding attention (flash-decoding): every query count from one token to past a tile of rows,
//! groups of query heads over one KV head, both head dimensions, every key and SDPA's top-left
//! causal mask, keys cut into one run or into a run per tile; random inputs beside NaN and
//! infinities in Q, K and V, subnormals and signed zeros, and scores large enough that the softmax
//! is nearly one-hot, one case per KV head.

use crate::prelude::*;
use kernels::attention::{DECODE_CAUSAL_FAMILY, DECODE_FAMILY, Decode, decode};
use kernels_host::families::attention_decode::{self, DecodeArrays};
use kernels_host::families::attention_oracle::{AttentionOracle, Geometry};
use ptxkit::device::mma::Bf16;

/// The special case each KV head (and its group of query heads) shows.
const CASES: [&str; 9] = [
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

/// (queries, keys, dim, group): one token and one key; a tile's edges; several queries per group;
/// 16 rows in one tile and 20 across two; a prime; head dimensions between the built ones (8, 40,
/// 80, 96), staged 64 or 128 wide.
const SHAPES: [(usize, usize, usize, usize); 11] = [
    (1, 1, 64, 1),
    (1, 33, 128, 4),
    (3, 65, 64, 2),
    (16, 130, 128, 1),
    (2, 97, 64, 8),
    (5, 70, 128, 4),
    (1, 257, 64, 3),
    (1, 33, 8, 2),
    (3, 65, 40, 4),
    (1, 130, 80, 8),
    (2, 97, 96, 3),
];

/// Q (`[kv heads × group][queries][dim]`), K and V (`[kv heads][keys][dim]`), bf16 values as
/// f32, KV head h and its query heads showing case `CASES[h]`.
fn special_inputs(rng: &mut StdRng, (queries, keys, dim, group): (usize, usize, usize, usize)) -> [Vec<f32>; 3] {
    let (q_head, kv_head) = (group * queries * dim, keys * dim);
    let mut random = |len: usize, gain: f32| -> Vec<f32> {
        (0..CASES.len() * len)
            .map(|_| gain * rng.random_range(-1.0f32..1.0))
            .collect()
    };
    let (mut q, mut k, mut v) = (random(q_head, 2.0), random(kv_head, 1.0), random(kv_head, 1.0));
    let at = |rng: &mut StdRng, h: usize, len: usize| h * len + rng.random_range(0..len);
    q[at(rng, 1, q_head)] = f32::NAN;
    q[at(rng, 2, q_head)] = f32::INFINITY;
    k[at(rng, 3, kv_head)] = f32::NAN;
    k[at(rng, 4, kv_head)] = f32::NEG_INFINITY;
    for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        v[at(rng, 5, kv_head)] = special;
    }
    let tiny = [0.0, -0.0, f32::from_bits(1 << 16), -1.0e-39, f32::MIN_POSITIVE];
    mix_in(rng, &mut q[6 * q_head..7 * q_head], 3, &tiny);
    mix_in(rng, &mut k[6 * kv_head..7 * kv_head], 3, &tiny);
    mix_in(rng, &mut v[6 * kv_head..7 * kv_head], 1, &tiny);
    let large = 7 * q_head + rng.random_range(0..group * queries) * dim;
    q[large..large + dim].iter_mut().for_each(|x| *x *= 64.0);
    mix_in(rng, &mut v[8 * kv_head..9 * kv_head], 40, &SPECIAL_VALUES);
    [q, k, v].map(|values| values.into_iter().map(|x| Bf16::from_f32(x).to_f32()).collect())
}

/// Every decoding kernel that runs on `backend` at [`SHAPES`], every key and causal, with one run
/// of keys and with a run per tile: each output NaN, an infinity or within the f64 reference's
/// bound as [`AttentionOracle`] says IEEE arithmetic has it.
pub(crate) fn decoding_attention_meets_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for shape in SHAPES {
        let (queries, keys, dim, group) = shape;
        let mut rng = StdRng::seed_from_u64(stream ^ (queries * 100_000 + keys * 1000 + dim + group) as u64);
        let [q, k, v] = special_inputs(&mut rng, shape);
        let bits = |values: &[f32]| -> Vec<u16> { values.iter().map(|&x| Bf16::from_f32(x).0).collect() };
        let inputs = [&q, &k, &v].map(|values| Buffer::upload(backend, &bits(values)).unwrap());
        let heads = (1, CASES.len() * group, CASES.len());
        for (family, causal) in [(&DECODE_FAMILY, false), (&DECODE_CAUSAL_FAMILY, true)] {
            // One run of keys, and as many as the keys have tiles.
            for warps in [1, usize::MAX / 2] {
                let mut problem = Decode::new(heads, queries, keys, dim, causal, warps).unwrap();
                if warps > 1 {
                    problem.chunk = decode::KEYS;
                    problem.splits = problem.visible_keys().div_ceil(decode::KEYS);
                }
                let oracle = AttentionOracle::new(Geometry::of_decode(problem), (&q, &k, &v), stream);
                for kernel in family.kernels {
                    if !runs_here(backend, &kernel.info(family.name), Source::Rust) {
                        continue;
                    }
                    let label = format!(
                        "{} at {queries} queries, {keys} keys, dim {dim}, group {group}, {} runs",
                        kernel.entry(),
                        problem.splits
                    );
                    let mut o = Buffer::upload(backend, &vec![0x7fbau16; problem.query_len()]).unwrap();
                    let mut partial = Buffer::upload(backend, &vec![f32::NAN; problem.partial_len().max(1)]).unwrap();
                    let [qb, kb, vb] = &inputs;
                    let arrays = DecodeArrays {
                        q: qb,
                        k: kb,
                        v: vb,
                        o: &mut o,
                        partial: &mut partial,
                    };
                    if let Err(e) = attention_decode::launch(backend, kernel, Source::Rust, &problem, arrays) {
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
    let cases: Vec<String> = CASES
        .iter()
        .enumerate()
        .map(|(h, case)| format!("KV head {h}: {case}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures (random stream {stream}; rerun with {RNG_ENV}={stream}; {}):\n{}",
        failures.len(),
        cases.join(", "),
        failures.join("\n")
    );
}
