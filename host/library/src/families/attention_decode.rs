//! Flash-decoding's host side: the two launches ([`launch`]), random Q, K and V in bf16 checked
//! against the f64 reference of [`super::attention_oracle`] for grouped heads, and the second
//! pass's own family, checked on random runs against an f64 weighing. The library to beat is
//! PyTorch's `scaled_dot_product_attention` with `enable_gqa`, timed beside these kernels by the
//! Python bench.

use super::attention::{bf16_inputs, check_aligned};
use super::attention_oracle::{AttentionOracle, Geometry};
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, guarded_inputs,
    resident_blocks_of, substream,
};
use kernels::Source;
use kernels::attention::{COMBINE_FAMILY, DECODE_CAUSAL_FAMILY, DECODE_FAMILY, Decode, combine, decode};
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Backend, Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The arrays of one decoding attention: Q, K and V read, O written, and the runs' partial
/// outputs ([`Decode::partial_len`] floats; may be empty with one run).
pub struct DecodeArrays<'a, B, F> {
    pub q: &'a B,
    pub k: &'a B,
    pub v: &'a B,
    pub o: &'a mut B,
    pub partial: &'a mut F,
}

/// Warps the first pass should have in all on `backend`: two waves of the resident ones.
pub fn warps_wanted(backend: &Backend) -> Result<usize> {
    let info = DECODE_FAMILY.kernel_infos()[0];
    Ok(2 * resident_blocks_of(backend, &info)? as usize * decode::WARPS as usize)
}

/// Attention of `arrays` by `kernel` (a first pass of [`DECODE_FAMILY`] or
/// [`DECODE_CAUSAL_FAMILY`], whose mask must be `problem`'s), then, with several runs, the second
/// pass from the same source. Checks every array's length, that Q, K, V and O are 16-byte
/// aligned and that `backend` can reach them.
pub fn launch<B: Array<u16>, F: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<Decode>,
    source: Source,
    problem: &Decode,
    mut arrays: DecodeArrays<'_, B, F>,
) -> Result<()> {
    let causal_kernel = DECODE_CAUSAL_FAMILY.kernels.iter().any(|k| k.entry() == kernel.entry());
    if causal_kernel != problem.causal {
        return Err(Error::InvalidInput {
            what: "kernel".into(),
            reason: format!(
                "{} is {} the causal mask, the problem {}",
                kernel.entry(),
                if causal_kernel { "for" } else { "without" },
                if problem.causal { "has it" } else { "has none" }
            ),
        });
    }
    launch_pass(backend, kernel, source, problem, arrays.reborrow())?;
    if problem.splits > 1 {
        launch_pass(backend, &combine::KERNEL, source, problem, arrays)?;
    }
    Ok(())
}

impl<B, F> DecodeArrays<'_, B, F> {
    fn reborrow(&mut self) -> DecodeArrays<'_, B, F> {
        DecodeArrays {
            q: self.q,
            k: self.k,
            v: self.v,
            o: self.o,
            partial: self.partial,
        }
    }
}

/// One launch of either pass (`kernel` of any of the three families) on `arrays`.
pub fn launch_pass<B: Array<u16>, F: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<Decode>,
    source: Source,
    problem: &Decode,
    arrays: DecodeArrays<'_, B, F>,
) -> Result<()> {
    let DecodeArrays { q, k, v, o, partial } = arrays;
    let (queries, keys) = (problem.query_len(), problem.key_len());
    for (name, len, needed) in [
        ("Q", q.len(), queries),
        ("K", k.len(), keys),
        ("V", v.len(), keys),
        ("O", o.len(), queries),
    ] {
        check_len(name, len, needed)?;
    }
    check_len("partial", partial.len(), problem.partial_len())?;
    let addresses = [
        q.address(backend)?,
        k.address(backend)?,
        v.address(backend)?,
        o.address_mut(backend)?,
    ];
    check_aligned(&["Q", "K", "V", "O"], &addresses)?;
    let partial_address = if problem.partial_len() == 0 {
        0
    } else {
        partial.address_mut(backend)?
    };
    let [q_address, k_address, v_address, o_address] = addresses;
    let args = (
        q_address as *const Bf16,
        k_address as *const Bf16,
        v_address as *const Bf16,
        o_address as *mut Bf16,
        partial_address as *mut f32,
        problem.kv_heads,
        problem.rows,
        problem.queries,
        problem.keys,
        problem.dim,
        problem.chunk,
        problem.splits,
    );
    // SAFETY: each pointer is its array's address on this backend, Q, K, V and O 16-byte aligned,
    // holding the elements the kernels read or write (bf16 is u16's size), `partial` its
    // partial_len() floats (null where there are none and the kernels do not touch it); dim is
    // one of the kernels' and every index fits 32 bits (Decode::new checked both).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[q, k, v, &*o, &*partial]) }
}

/// Bytes of one bf16.
const BF16_BYTES: u64 = 2;
/// The poison of O: a bf16 NaN.
const POISON: u16 = 0x7fc0;
/// Q's inputs are scaled by this, so that the scores spread over several units.
const QUERY_GAIN: f32 = 4.0;

/// The host side of flash-decoding, every key or the causal mask: sizes are
/// `[batch × heads_kv, group, keys]`, one query token, head dimension 128 (other query counts and
/// head dimensions: the special-value tests and the Python operator).
pub struct DecodeDemo {
    pub causal: bool,
}

/// Every key.
pub const ATTENTION_DECODE: DecodeDemo = DecodeDemo { causal: false };
/// The causal mask (top-left: one query attends to key 0 alone).
pub const ATTENTION_DECODE_CAUSAL: DecodeDemo = DecodeDemo { causal: true };

/// The demo's dimension and query tokens.
const DIM: usize = 128;
const QUERIES: usize = 1;

/// The problem of `size` on `backend`.
fn problem_of(backend: Option<&Backend>, causal: bool, size: Size) -> Result<Decode> {
    let [kv_heads, group, keys] = size.0;
    let warps = match backend {
        Some(backend) => warps_wanted(backend)?,
        None => 1,
    };
    Ok(Decode::new(
        (1, kv_heads.saturating_mul(group), kv_heads),
        QUERIES,
        keys,
        DIM,
        causal,
        warps,
    )?)
}

impl DecodeDemo {
    fn kernels_family(&self) -> &'static Family<Decode> {
        if self.causal {
            &DECODE_CAUSAL_FAMILY
        } else {
            &DECODE_FAMILY
        }
    }
}

impl FamilyDemo for DecodeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.kernels_family()
    }

    fn extents(&self) -> &'static [&'static str] {
        &["kv-heads", "group", "keys"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = problem_of(None, self.causal, size)?;
        let (q, kv) = (problem.query_len() as u64, problem.key_len() as u64);
        Ok(Plan {
            work: Work {
                bytes: problem.bytes(),
                flops: problem.flops(),
                bound: Bound::Memory,
            },
            x: size.0[2] as f64,
            // Inputs as f32 and bf16, O read back and its poison, the reference rows.
            host_bytes: (4 + 2) * (2 * q + 2 * kv + 3 * GUARD as u64) + 4 * (q + GUARD as u64) + 16 * q.min(1 << 22),
            // Q, K, V, O and the partial sums of up to one run per tile.
            device_bytes: BF16_BYTES * (2 * q + 2 * kv + 4 * GUARD as u64)
                + 4 * (problem.kv_heads as u64 * problem.rows as u64)
                    * (problem.visible_keys().div_ceil(decode::KEYS) as u64)
                    * (DIM as u64 + 1),
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = problem_of(Some(backend), self.causal, size)?;
        DecodeCase::new(backend, self.kernels_family(), problem, rng, sets)
            .map(|case| Box::new(case) as Box<dyn Case + 'a>)
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.causal {
                "decoding attention, causal (SDPA's top-left mask): one query token per head against a KV cache, grouped heads, bf16, split over the keys (flash-decoding)"
            } else {
                "decoding attention: one query token per head against a KV cache of `keys` tokens, query heads in groups over KV heads, bf16, split over the keys (flash-decoding)"
            },
            // Llama 3 8B: 8 KV heads of 4 query heads; batch 8; 32768 tokens of cache.
            default: Size([64, 4, 32768]),
            emulator_cap: Size([4, 8, 300]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            // One key, a tile's edges, a prime; groups of 1 to 16 rows and past a tile (17).
            edge: vec![
                Size([1, 1, 1]),
                Size([1, 4, 31]),
                Size([2, 8, 33]),
                Size([1, 16, 65]),
                Size([3, 17, 64]),
                Size([1, 2, 131]),
                Size([2, 1, 257]),
                // Runs of three tiles and more (two in flight behind the one computed on), and
                // more runs than the combining block has warps (32 on the emulator).
                Size([1, 1, 2111]),
                Size([1, 3, 1031]),
            ],
            large: vec![Size([8, 4, 4096]), Size([64, 8, 4099]), Size([8, 8, 131_072])],
            // The KV bytes from 64 MiB: batch 1–16 × 8 KV heads, GQA 32/8, 4k–128k keys.
            bench: vec![
                Size([8, 4, 16_384]),
                Size([8, 4, 131_072]),
                Size([64, 4, 32_768]),
                Size([128, 4, 8192]),
                Size([64, 8, 16_384]),
            ],
            smoke: Size([2, 4, 300]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for DecodeDemo {}

/// One prepared decoding problem: its inputs, O, the runs' partials and the reference.
struct DecodeCase<'a> {
    backend: &'a Backend,
    family: &'static Family<Decode>,
    problem: Decode,
    oracle: AttentionOracle,
    inputs: Vec<[Buffer<u16>; 3]>,
    outputs: Outputs<u16>,
    partials: Outputs<f32>,
}

impl<'a> DecodeCase<'a> {
    fn new(
        backend: &'a Backend,
        family: &'static Family<Decode>,
        problem: Decode,
        rng: u64,
        sets: usize,
    ) -> Result<Self> {
        let (q_len, kv_len) = (problem.query_len(), problem.key_len());
        let (q, q_bits) = bf16_inputs(guarded_inputs(substream(rng, 7), q_len), QUERY_GAIN);
        let (k, k_bits) = bf16_inputs(guarded_inputs(substream(rng, 8), kv_len), 1.0);
        let (v, v_bits) = bf16_inputs(guarded_inputs(substream(rng, 9), kv_len), 1.0);
        let oracle = AttentionOracle::new(
            Geometry::of_decode(problem),
            (&q[..q_len], &k[..kv_len], &v[..kv_len]),
            substream(rng, 10),
        );
        let inputs = (0..sets.max(1))
            .map(|_| {
                Ok([
                    Buffer::upload(backend, &q_bits)?,
                    Buffer::upload(backend, &k_bits)?,
                    Buffer::upload(backend, &v_bits)?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DecodeCase {
            backend,
            family,
            problem,
            oracle,
            inputs,
            outputs: Outputs::new(backend, q_len, GUARD, POISON, sets)?,
            // Partials never written read as NaN, and so does every O they reach.
            partials: Outputs::new(backend, problem.partial_len(), GUARD, f32::NAN, sets)?,
        })
    }
}

impl Case for DecodeCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [q, k, v] = &self.inputs[set];
        let arrays = DecodeArrays {
            q,
            k,
            v,
            o: self.outputs.get_mut(set),
            partial: self.partials.get_mut(set),
        };
        launch(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)?;
        self.partials.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let len = self.problem.query_len();
        let o = self.outputs.read(self.backend, set)?;
        let summary = self.oracle.check(&o[..len])?;
        if let Some(i) = o[len..].iter().position(|&bits| bits != POISON) {
            return Err(format!("wrote past the end of O, at index {}", len + i));
        }
        let partial = self.partials.read(self.backend, set)?;
        let partial_len = self.problem.partial_len();
        if let Some(i) = partial[partial_len..].iter().position(|x| !x.is_nan()) {
            return Err(format!(
                "wrote past the end of the partial sums, at index {}",
                partial_len + i
            ));
        }
        Ok(format!(
            "{summary}; {} runs of {} keys",
            self.problem.splits, self.problem.chunk
        ))
    }
}

/// The second pass alone: `[rows, splits, dim]` of random runs (outputs in [-1, 1), log-sum-exps
/// over a range of 40 with a few runs at −∞, some rows all −∞), against their f64 weighing.
pub struct CombineDemo;

/// The problem whose second pass weighs `splits` runs of each of `rows` rows (one query of one
/// head per KV head; the keys, which the second pass does not read, one).
fn combine_problem(size: Size) -> Result<Decode> {
    let [rows, splits, dim] = size.0;
    // Checks the rows and the dimension.
    let mut problem = Decode::new((rows, 1, 1), 1, 1, dim, false, 1)?;
    let invalid = |reason: String| ptxkit::InvalidSize {
        problem: "attention_decode_combine",
        reason,
    };
    if splits < 2 {
        return Err(invalid(format!(
            "the second pass weighs 2 runs or more (got {splits}): one run needs none"
        ))
        .into());
    }
    let partial = rows.checked_mul(splits).and_then(|n| n.checked_mul(dim + 1));
    if partial.is_none_or(|n| n > u32::MAX as usize) {
        let reason = format!(
            "rows × splits × (dim + 1) = {rows} × {splits} × {} is past 32 bits",
            dim + 1
        );
        return Err(invalid(reason).into());
    }
    problem.splits = splits as u32;
    problem.chunk = decode::KEYS;
    Ok(problem)
}

/// The f64 weighing of one row's runs, and its bound: each weight's relative error (`ex2.approx`
/// and the exponent's rounding), each f32 addition over the runs, the division and bf16's rounding.
fn reference_combine(outputs: &[f32], lse: &[f32], dim: usize) -> Vec<(f64, f64)> {
    let max = lse.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    if max == f64::NEG_INFINITY || lse.iter().any(|l| l.is_nan()) {
        return vec![(f64::NAN, 0.0); dim];
    }
    let weights: Vec<f64> = lse.iter().map(|&l| (l as f64 - max).exp2()).collect();
    let total: f64 = weights.iter().sum();
    let splits = lse.len() as f64;
    let u = 1.0 / (1u64 << 24) as f64;
    let exponent = (max.abs() + 1.0) * u;
    let epsilon_w = std::f64::consts::LN_2 * exponent + 1.0 / (1u64 << 21) as f64;
    (0..dim)
        .map(|c| {
            let (mut sum, mut magnitude) = (0.0, 0.0);
            for (s, w) in weights.iter().enumerate() {
                let x = outputs[s * dim + c] as f64;
                sum += w * x;
                magnitude += w * x.abs();
            }
            let expected = sum / total;
            let relative = 2.0 * epsilon_w + 2.0 * (splits + 2.0) * u;
            (expected, magnitude / total * relative + expected.abs() / 256.0 + 1e-38)
        })
        .collect()
}

impl FamilyDemo for CombineDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &COMBINE_FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "splits", "dim"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = combine_problem(size)?;
        let (o, partial) = (problem.query_len() as u64, problem.partial_len() as u64);
        Ok(Plan {
            work: Work {
                bytes: (4 * partial + BF16_BYTES * o) as f64,
                flops: 2.0 * partial as f64,
                bound: Bound::Memory,
            },
            x: size.0[0] as f64,
            host_bytes: 4 * (partial + GUARD as u64) + (2 + 16) * (o + GUARD as u64),
            device_bytes: 4 * (partial + GUARD as u64) + BF16_BYTES * (o + GUARD as u64),
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = combine_problem(size)?;
        let (rows, splits, dim) = (problem.kv_heads as usize, problem.splits as usize, problem.dim as usize);
        let mut random = StdRng::seed_from_u64(substream(rng, 11));
        let mut partial: Vec<f32> = (0..rows * splits * dim)
            .map(|_| random.random_range(-1.0..1.0))
            .collect();
        let lse: Vec<f32> = (0..rows * splits)
            .map(|i| match (i / splits % 7, random.random_range(0..8)) {
                // Row 3 of every 7: each run −∞ (no key attended to): NaN out.
                (3, _) => f32::NEG_INFINITY,
                (_, 0) => f32::NEG_INFINITY,
                _ => random.random_range(-20.0..20.0),
            })
            .collect();
        // A run at −∞ left zeros.
        for (i, l) in lse.iter().enumerate() {
            if *l == f32::NEG_INFINITY {
                partial[i * dim..(i + 1) * dim].iter_mut().for_each(|x| *x = 0.0);
            }
        }
        let expected: Vec<Vec<(f64, f64)>> = (0..rows)
            .map(|r| {
                reference_combine(
                    &partial[r * splits * dim..(r + 1) * splits * dim],
                    &lse[r * splits..(r + 1) * splits],
                    dim,
                )
            })
            .collect();
        let mut values = partial;
        values.extend_from_slice(&lse);
        values.resize(values.len() + GUARD, f32::NAN);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &values))
            .collect::<Result<Vec<_>>>()?;
        // Q, K and V are not read by the second pass: zeros of their lengths stand for them.
        let unread = Buffer::upload(backend, &vec![0u16; problem.key_len().max(problem.query_len())])?;
        Ok(Box::new(CombineCase {
            backend,
            problem,
            expected,
            inputs,
            unread,
            outputs: Outputs::new(backend, problem.query_len(), GUARD, POISON, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "flash-decoding's second pass: each query row's runs of keys weighed by their log-sum-exps into bf16 O",
            default: Size([4096, 16, 128]),
            emulator_cap: Size([64, 40, 128]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: vec![
                Size([1, 2, 64]),
                Size([7, 3, 128]),
                Size([9, 33, 64]),
                Size([17, 5, 128]),
                // Head dimensions between the built ones: the columns past them neither read nor
                // stored.
                Size([3, 4, 8]),
                Size([5, 3, 40]),
                Size([9, 2, 96]),
                // More runs than the block's warps take in two batches each, at a head whose
                // columns end inside a warp (the last warp's lanes past it meet the shuffle).
                Size([2, 70, 72]),
            ],
            large: vec![Size([4096, 64, 128]), Size([65_537, 2, 64])],
            bench: vec![Size([4096, 16, 128]), Size([32_768, 8, 128])],
            smoke: Size([16, 4, 128]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for CombineDemo {}

struct CombineCase<'a> {
    backend: &'a Backend,
    problem: Decode,
    expected: Vec<Vec<(f64, f64)>>,
    inputs: Vec<Buffer<f32>>,
    unread: Buffer<u16>,
    outputs: Outputs<u16>,
}

impl Case for CombineCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let arrays = DecodeArrays {
            q: &self.unread,
            k: &self.unread,
            v: &self.unread,
            o: self.outputs.get_mut(set),
            partial: &mut self.inputs[set],
        };
        launch_pass(
            self.backend,
            &COMBINE_FAMILY.kernels[kernel],
            source,
            &self.problem,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let dim = self.problem.dim as usize;
        let o = self.outputs.read(self.backend, set)?;
        let mut worst = 0.0f64;
        for (r, row) in self.expected.iter().enumerate() {
            for (c, &(want, bound)) in row.iter().enumerate() {
                let got = Bf16(o[r * dim + c]).to_f32() as f64;
                let ok = if want.is_nan() {
                    got.is_nan()
                } else {
                    (got - want).abs() <= bound
                };
                if !ok {
                    return Err(format!("O[row {r}][{c}] = {got}, expected {want} (bound {bound:.3e})"));
                }
                if !want.is_nan() {
                    worst = worst.max((got - want).abs() / bound);
                }
            }
        }
        let len = self.problem.query_len();
        if let Some(i) = o[len..].iter().position(|&bits| bits != POISON) {
            return Err(format!("wrote past the end of O, at index {}", len + i));
        }
        Ok(format!(
            "{} rows of {} runs within the bound of the f64 weighing (worst at {:.0} % of it), rows of −∞ runs NaN",
            self.expected.len(),
            self.problem.splits,
            100.0 * worst
        ))
    }
}
