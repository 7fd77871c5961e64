//! The host side of the FP8 matmul families, with per-tensor scales ([`PER_TENSOR`]), row-wise
//! ones ([`ROW_WISE`], and over f32 totals [`ROW_WISE_PROMOTED`]) and block ones ([`BLOCK_WISE`]):
//! their safe launch (A and Bᵀ of e4m3 bits,
//! C of bf16 bits, the scales), random e4m3 operands over every finite code and random scales, and
//! the f64 check, whose bound allows for the FP8 tensor cores' narrower sums. No library baseline
//! yet: cuBLASLt's FP8 GEMM is not in the host's bindings; the Python suite times PyTorch's
//! `torch._scaled_mm` beside the operator.

use super::auto::{Rung, Target};
use super::choice::Choice;
use super::elementwise::check_shape;
use super::matmul::{Oracle, sampled_positions};
use super::matmul_bf16::{SWAPPED_MAX_ROWS, persistent_tile};
use super::tma_operands::matrix_maps;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    substream,
};
use kernels::Source;
use kernels::matmul::scale::SCALE_BLOCK_K;
use kernels::matmul_bf16::TensorMaps;
use kernels::matmul_fp8::{
    A_BOX, B_BOX, FAMILY, MatmulFp8, arrivals_needed, blockwise, is_swapped, partials_needed, promoted, rowwise,
    scale_lengths, scaled, swapped, tile_width,
};
use kernels::reference::Expected;
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Backend, Gpu, PaddedCopies, Result, fp8_swizzled_pitched};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `C = scale_a · scale_b · (A·B)` with `kernel`, a rung of either family: checks that A holds
/// m·k e4m3, Bᵀ n·k, C m·n bf16 (each as bits) and the scales the f32 factors `kernel` reads (one
/// each, or m and n for the row-wise rungs: [`scale_lengths`]), and that they live where
/// `backend` can reach them, then launches.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<MatmulFp8>,
    source: Source,
    problem: &MatmulFp8,
    a: &impl Array<u8>,
    bt: &impl Array<u8>,
    c: &mut impl Array<u16>,
    (scale_a, scale_b): (&impl Array<f32>, &impl Array<f32>),
) -> Result<()> {
    let (a_len, bt_len, c_len) = problem.lengths();
    check_len("A", a.len(), a_len)?;
    check_len("Bᵀ", bt.len(), bt_len)?;
    check_len("C", c.len(), c_len)?;
    let (scale_a_len, scale_b_len) = scale_lengths(kernel, problem);
    check_len("scale_a", scale_a.len(), scale_a_len)?;
    check_len("scale_b", scale_b.len(), scale_b_len)?;
    let (a_address, bt_address) = (a.address(backend)?, bt.address(backend)?);
    // The copies and the partial sums stay held until the launch is enqueued.
    let (maps, _copies) = tensor_maps(backend, kernel, problem, (a_address, bt_address))?;
    let shape = backend.launch_shape_from(source.module(), kernel, problem)?;
    let arrivals = backend.zeroed_counters(arrivals_needed(kernel, problem, shape.grid))?;
    let partials = backend.partial_sums(partials_needed(kernel, problem, shape.grid))?;
    let args = (
        a_address as *const E4M3,
        bt_address as *const E4M3,
        c.address_mut(backend)? as *mut Bf16,
        problem.m,
        problem.n,
        problem.k,
        maps,
        arrivals.as_ptr(),
        partials.as_ptr(),
        scale_a.address(backend)? as *const f32,
        scale_b.address(backend)? as *const f32,
    );
    // SAFETY: each pointer is its array's address on this backend; A, Bᵀ and C hold the m·k, n·k
    // and m·n elements the kernels read or write for this problem (e4m3 is a byte, bf16 a u16),
    // the scales the factors `kernel` reads; `maps`, where not null, describes A and Bᵀ; `arrivals` and `partials`
    // hold the zeroed counters and partial sums the TMA rungs need for `shape`, the launch shape
    // `launch_from` would compute.
    unsafe {
        backend.launch_fn(
            source.module(),
            &kernel.code,
            &shape,
            args,
            &[a, bt, scale_a, scale_b, &*c],
        )
    }
}

/// The tensor maps of A (m × k) and Bᵀ (n × k) for a TMA or swapped rung on a GPU (of row-padded
/// copies where TMA cannot read them in place: k not a multiple of 16), in the rung's boxes, with
/// the copies; null otherwise.
fn tensor_maps<'g>(
    backend: &'g Backend,
    kernel: &Kernel<MatmulFp8>,
    problem: &MatmulFp8,
    operands: (u64, u64),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    let MatmulFp8 { m, n, k } = *problem;
    let boxes = match is_swapped(kernel) {
        true => Some((swapped::A_BOX, swapped::B_BOX)),
        false => tile_width(kernel).map(|_| (A_BOX, B_BOX)),
    };
    match (backend, boxes) {
        (Backend::Gpu(gpu), Some(boxes)) => matrix_maps(
            (backend, gpu),
            fp8_swizzled_pitched,
            1,
            ((m, k), (n, k)),
            operands,
            boxes,
        ),
        _ => Ok((std::ptr::null(), None)),
    }
}

/// How the sums are scaled: one factor for the whole of C, one per row of A and one per column
/// of B, or per blocks (1×128 of A, 128×128 of B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scales {
    PerTensor,
    RowWise,
    BlockWise,
    /// Row-wise factors over f32 totals of each block of 128 of k.
    RowWisePromoted,
}

impl Scales {
    /// The family of kernels that take these scales.
    pub fn family(self) -> &'static ptxkit::Family<MatmulFp8> {
        match self {
            Scales::PerTensor => &FAMILY,
            Scales::RowWise => &rowwise::FAMILY,
            Scales::BlockWise => &blockwise::FAMILY,
            Scales::RowWisePromoted => &promoted::FAMILY,
        }
    }
}

/// The host side of an FP8 matmul family.
pub struct MatmulFp8Demo {
    scales: Scales,
}

/// `torch._scaled_mm` with per-tensor scales: [`FAMILY`].
pub const PER_TENSOR: MatmulFp8Demo = MatmulFp8Demo {
    scales: Scales::PerTensor,
};

/// `torch._scaled_mm` with row-wise scales: [`rowwise::FAMILY`].
pub const ROW_WISE: MatmulFp8Demo = MatmulFp8Demo {
    scales: Scales::RowWise,
};

/// `torch._scaled_mm` with block scales (1×128 for A, 128×128 for B): [`blockwise::FAMILY`].
pub const BLOCK_WISE: MatmulFp8Demo = MatmulFp8Demo {
    scales: Scales::BlockWise,
};

/// `torch._scaled_mm` with row-wise scales, without `use_fast_accum`: [`promoted::FAMILY`].
pub const ROW_WISE_PROMOTED: MatmulFp8Demo = MatmulFp8Demo {
    scales: Scales::RowWisePromoted,
};

impl MatmulFp8Demo {
    /// This family's kernels.
    pub fn kernels(&self) -> &'static ptxkit::Family<MatmulFp8> {
        self.scales.family()
    }

    /// This family's swapped-role rung.
    fn swapped(&self) -> &'static Kernel<MatmulFp8> {
        match self.scales {
            Scales::PerTensor => &swapped::SWAPPED,
            Scales::RowWise => &rowwise::SWAPPED,
            Scales::BlockWise => &blockwise::SWAPPED,
            Scales::RowWisePromoted => &promoted::SWAPPED,
        }
    }
}

/// The bound's unit for the FP8 tensor cores' sums, relative to each sum it applies to: they are
/// kept with 13 mantissa bits, truncated (published measurements of Hopper's FP8 `wgmma`, whose
/// f32 results have their 10 lowest bits zero), so within 2^-13 of the sum at each addition; the
/// bound allows twice that.
const TENSOR_CORE_UNIT: f64 = 1.0 / 4096.0;

/// The k of one FP8 `wgmma`: the sums the bound takes as one addition into the accumulators.
const WGMMA_K: usize = 32;

/// f32's unit roundoff.
const F32_UNIT_ROUNDOFF: f64 = 1.0 / 16_777_216.0;

/// C's poison: a bf16 NaN, which an element never written stays.
const POISON: u16 = 0x7fc1;

/// bf16's unit roundoff.
const BF16_UNIT_ROUNDOFF: f64 = 1.0 / 256.0;

/// The bf16 ladder's edge shapes, with k around the FP8 tiles' 128-deep steps and runs of k that
/// meet in the partial sums (n of 515: C's rows not 8-byte aligned).
const EDGE_SHAPES: [[usize; 3]; 10] = [
    [1, 1, 1],
    [31, 33, 17],
    [33, 31, 130],
    [64, 136, 200],
    [130, 72, 256],
    [129, 255, 9],
    [17, 65, 131],
    [1, 1027, 515],
    [33, 515, 2051],
    [130, 1030, 1100],
];

/// The factors of C's element `(row, col)` as the kernels read them from `scales` (one each,
/// m and n, or block scales laid out as [`kernels::matmul_fp8::BlockScales`] says), in f64: one,
/// or one per block of [`SCALE_BLOCK_K`] of k (block scales, and row-wise ones over f32 totals of
/// each block: the same factor for every block).
fn factors_at(
    kind: Scales,
    (scale_a, scale_b): (&[f32], &[f32]),
    (m, k): (usize, usize),
    (row, col): (usize, usize),
) -> Vec<f64> {
    let product = |x: f32, y: f32| x as f64 * y as f64;
    match kind {
        Scales::PerTensor => vec![product(scale_a[0], scale_b[0])],
        Scales::RowWise => vec![product(scale_a[row], scale_b[col])],
        // One factor times the blocks' totals: the bound of each block's sum times it.
        Scales::RowWisePromoted => vec![product(scale_a[row], scale_b[col]); k.div_ceil(SCALE_BLOCK_K as usize)],
        Scales::BlockWise => {
            let (blocks, block_k) = (k.div_ceil(SCALE_BLOCK_K as usize), SCALE_BLOCK_K as usize);
            (0..blocks)
                .map(|block| product(scale_a[block * m + row], scale_b[col / block_k * blocks + block]))
                .collect()
        }
    }
}

/// Element `(row, col)` of the scaled product in f64 from A (m×k) and Bᵀ (n×k) as f32, with
/// `factors` its one factor or its factor per block of [`SCALE_BLOCK_K`] of k, and its tolerance.
/// For each block's sum (all of k where one factor): within each `wgmma`'s 32 products and at each
/// addition of their sum to the running one, [`TENSOR_CORE_UNIT`] of the sums, plus an f32 sum's
/// `len + 2` unit roundoffs (the tiled rung's), plus every product of a subnormal
/// ([`is_subnormal`]), then its factor's product and multiply; with
/// blocks, the f32 totals' additions; then C's rounding to bf16.
fn expected_at(a: &[f32], bt: &[f32], k: usize, factors: &[f64], (row, col): (usize, usize)) -> (f64, f64) {
    let block_k = if factors.len() == 1 { k } else { SCALE_BLOCK_K as usize };
    let (a_row, bt_row) = (&a[row * k..(row + 1) * k], &bt[col * k..(col + 1) * k]);
    let (mut value, mut tolerance, mut totals) = (0.0f64, 0.0f64, 0.0f64);
    for ((a_block, bt_block), &factor) in a_row.chunks(block_k).zip(bt_row.chunks(block_k)).zip(factors) {
        let (mut sum, mut running, mut magnitude, mut subnormal) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for (a_chunk, bt_chunk) in a_block.chunks(WGMMA_K).zip(bt_block.chunks(WGMMA_K)) {
            for (&x, &y) in a_chunk.iter().zip(bt_chunk) {
                let product = x as f64 * y as f64;
                sum += product;
                magnitude += product.abs();
                if is_subnormal(x) || is_subnormal(y) {
                    subnormal += product.abs();
                }
            }
            running += sum.abs();
        }
        let sums = TENSOR_CORE_UNIT * (running + magnitude)
            + (a_block.len() as f64 + 2.0) * F32_UNIT_ROUNDOFF * magnitude
            + subnormal;
        value += factor * sum;
        tolerance += factor.abs() * sums + 2.0 * F32_UNIT_ROUNDOFF * (factor * sum).abs();
        totals += factor.abs() * (sum.abs() + sums);
    }
    if factors.len() > 1 {
        tolerance += (factors.len() as f64 + 1.0) * F32_UNIT_ROUNDOFF * totals;
    }
    (value, tolerance + BF16_UNIT_ROUNDOFF * (value.abs() + tolerance))
}

/// Whether `x` is one of e4m3's subnormal values: products of one the FP8 tensor cores may drop
/// (run 2026-12-07 k: one element of 129 × 255 × 9 off by such a product, on every tensor-core
/// tile, as `torch._scaled_mm` computes it too), which the bound allows whole.
fn is_subnormal(x: f32) -> bool {
    x != 0.0 && x.abs() < E4M3_SMALLEST_NORMAL
}

/// e4m3's smallest normal magnitude, 2^-6.
const E4M3_SMALLEST_NORMAL: f32 = 1.0 / 64.0;

/// The f64 reference of the scaled product ([`expected_at`], `factors` giving each element's) at
/// the elements [`sampled_positions`] names.
fn reference(
    a: &[f32],
    bt: &[f32],
    (m, n, k): (usize, usize, usize),
    factors: impl Fn((usize, usize)) -> Vec<f64>,
    rng: u64,
) -> Oracle {
    let positions = sampled_positions((m, n, k), rng);
    let every: Vec<(usize, usize)>;
    let at = match &positions {
        Some(sampled) => sampled,
        None => {
            every = (0..m * n).map(|i| (i / n, i % n)).collect();
            &every
        }
    };
    let (values, tolerance) = at.iter().map(|&p| expected_at(a, bt, k, &factors(p), p)).unzip();
    Oracle::of(n, positions, Expected { values, tolerance })
}

/// `len` random e4m3 codes, every finite one as likely (both signs, zeros, subnormals, up to
/// ±448: each code's decoding is exercised), then [`GUARD`] NaN codes.
fn random_codes(rng: u64, len: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(rng);
    let mut codes: Vec<u8> = (0..len)
        .map(|_| {
            loop {
                let code: u8 = rng.random();
                if !E4M3(code).is_nan() {
                    break code;
                }
            }
        })
        .collect();
    codes.resize(len + GUARD, E4M3::NAN.0);
    codes
}

/// One input set: A and Bᵀ (e4m3 bits), the two scales.
struct InputSet {
    a: Buffer<u8>,
    bt: Buffer<u8>,
    scale_a: Buffer<f32>,
    scale_b: Buffer<f32>,
}

/// An FP8 product's case: random e4m3 A (m×k) and Bᵀ (n×k) with NaN guards past them and random
/// scales (one each, or m and n), `sets` times; C of bf16 poisoned; the f64 reference of the
/// operands as given.
struct Fp8Case<'a> {
    backend: &'a Backend,
    family: &'static ptxkit::Family<MatmulFp8>,
    problem: MatmulFp8,
    reference: Oracle,
    inputs: Vec<InputSet>,
    outputs: Outputs<u16>,
}

impl<'a> Fp8Case<'a> {
    fn new(backend: &'a Backend, kind: Scales, problem: MatmulFp8, rng: u64, sets: usize) -> Result<Self> {
        let (a_len, bt_len, c_len) = problem.lengths();
        let a = random_codes(substream(rng, 4), a_len);
        let bt = random_codes(substream(rng, 5), bt_len);
        let mut scale_rng = StdRng::seed_from_u64(substream(rng, 7));
        let family = kind.family();
        let (scale_a_len, scale_b_len) = scale_lengths(&family.kernels[0], &problem);
        let mut factors = |len: usize| {
            (0..len)
                .map(|_| scale_rng.random_range(0.25..4.0))
                .collect::<Vec<f32>>()
        };
        let scales = (factors(scale_a_len), factors(scale_b_len));
        let widen = |codes: &[u8]| codes.iter().map(|&c| E4M3(c).to_f32()).collect::<Vec<f32>>();
        let (m, n, k) = (problem.m as usize, problem.n as usize, problem.k as usize);
        let reference = reference(
            &widen(&a[..a_len]),
            &widen(&bt[..bt_len]),
            (m, n, k),
            |p| factors_at(kind, (&scales.0, &scales.1), (m, k), p),
            substream(rng, 6),
        );
        let inputs = (0..sets.max(1))
            .map(|_| {
                Ok(InputSet {
                    a: Buffer::upload(backend, &a)?,
                    bt: Buffer::upload(backend, &bt)?,
                    scale_a: Buffer::upload(backend, &scales.0)?,
                    scale_b: Buffer::upload(backend, &scales.1)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Fp8Case {
            backend,
            family,
            problem,
            reference,
            inputs,
            outputs: Outputs::new(backend, c_len, GUARD, POISON, sets)?,
        })
    }
}

impl Case for Fp8Case<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let InputSet {
            a,
            bt,
            scale_a,
            scale_b,
        } = &self.inputs[set];
        launch(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            a,
            bt,
            self.outputs.get_mut(set),
            (scale_a, scale_b),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let c_len = self.problem.lengths().2;
        let c: Vec<f32> = self
            .outputs
            .read(self.backend, set)?
            .into_iter()
            .map(|bits| Bf16(bits).to_f32())
            .collect();
        let summary = self.reference.check(&c[..c_len])?;
        check_guard(&c, c_len)?;
        Ok(summary)
    }
}

impl FamilyDemo for MatmulFp8Demo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.kernels()
    }

    fn extents(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [m, n, k] = size.0;
        let problem = MatmulFp8::new(m, n, k)?;
        for kernel in self.kernels().kernels {
            check_shape(kernel, &problem)?;
        }
        let (a_len, bt_len, c_len) = problem.lengths();
        let (scale_a_len, scale_b_len) = scale_lengths(&self.kernels().kernels[0], &problem);
        let scales = 4 * (scale_a_len + scale_b_len) as u64;
        let operands = (a_len + bt_len + 2 * GUARD) as u64;
        let output = 2 * (c_len + GUARD) as u64;
        Ok(Plan {
            work: Work {
                bytes: (a_len + bt_len + 2 * c_len) as f64,
                flops: problem.flops(),
                bound: Bound::Compute,
            },
            x: m as f64,
            // The codes and their f32 values, the read-back C, its poison and widened copy, the
            // reference.
            host_bytes: 5 * operands + 4 * output + 16 * c_len as u64 + 2 * scales,
            device_bytes: operands + output + scales,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [m, n, k] = size.0;
        Ok(Box::new(Fp8Case::new(
            backend,
            self.scales,
            MatmulFp8::new(m, n, k)?,
            rng,
            sets,
        )?))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: match self.scales {
                Scales::PerTensor => {
                    "C = scale_a·scale_b·(A·B) on the FP8 tensor cores: e4m3 A (m×k) and Bᵀ (n×k), f32 sums, C rounded to bf16 (torch._scaled_mm with per-tensor scales)"
                }
                Scales::RowWise => {
                    "C[i][j] = scale_a[i]·scale_b[j]·(A·B)[i][j] on the FP8 tensor cores: e4m3 A (m×k) and Bᵀ (n×k), f32 sums, C rounded to bf16 (torch._scaled_mm with row-wise scales)"
                }
                Scales::RowWisePromoted => {
                    "C[i][j] = scale_a[i]·scale_b[j]·(A·B)[i][j] on the FP8 tensor cores, each block of 128 of k's sums added into f32 totals: e4m3 A (m×k) and Bᵀ (n×k), C rounded to bf16 (torch._scaled_mm with row-wise scales, without use_fast_accum)"
                }
                Scales::BlockWise => {
                    "C = Σ over blocks of 128 of k of (scale_a[row, block]·scale_b[block, column / 128])·(the block's A·B) on the FP8 tensor cores: e4m3 A (m×k) and Bᵀ (n×k), each block's sums scaled into f32 totals, C rounded to bf16 (1×128 and 128×128 block scales, as DeepSeek-V3's)"
                }
            },
            default: Size([8192, 8192, 8192]),
            emulator_cap: Size([256, 256, 256]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&s| Size(s)).collect(),
            // 4096³ whole waves of tiles; 4096 × 1000 × 333 and 128 × 4096 × 4096 runs of k;
            // 2100 × 4100 a last wave part-empty on 132 SMs.
            large: vec![
                Size([4096, 4096, 4096]),
                Size([4096, 1000, 333]),
                Size([128, 4096, 4096]),
                Size([2100, 4100, 1000]),
            ],
            bench: {
                let square = [1024, 4096, 8192].map(|s| Size([s, s, s]));
                let other = [[2048, 11008, 4096], [12608, 4096, 1024], [128, 4096, 4096]];
                square.into_iter().chain(other.map(Size)).collect()
            },
            smoke: Size([70, 136, 200]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for MatmulFp8Demo {
    fn fastest_rung(&self, target: Target, size: Size) -> Option<Rung> {
        if !target.sm90a {
            return Some(Rung {
                entry: self.kernels().kernels[0].entry(),
                why: "the CUDA cores' tiles: FP8's tensor-core rungs need sm_90a's PTX",
            });
        }
        // Else the TMA rung's tiles are configurations, but for A of few rows.
        (size.0[0] <= SWAPPED_MAX_ROWS).then_some(Rung {
            entry: self.swapped().entry(),
            why: "A of at most 32 rows on sm_90a: Cᵀ = Bᵀ·Aᵀ on wgmma's 64×16 (16 rows a block), Bᵀ streamed once by TMA in strips of columns and runs of k",
        })
    }

    fn configurations(&self) -> &'static [&'static str] {
        const TILES: [&str; 4] = [
            scaled::PERSISTENT_128X64.entry(),
            scaled::PERSISTENT_128X128.entry(),
            scaled::PERSISTENT.entry(),
            scaled::CLUSTERED.entry(),
        ];
        // No clustered tile with row-wise scales (kernels::matmul_fp8::rowwise).
        const ROW_WISE_TILES: [&str; 3] = [
            rowwise::PERSISTENT_128X64.entry(),
            rowwise::PERSISTENT_128X128.entry(),
            rowwise::PERSISTENT.entry(),
        ];
        // Tiles of at most 128 columns with block scales (kernels::matmul_fp8::blockwise).
        const BLOCK_WISE_TILES: [&str; 2] = [
            blockwise::PERSISTENT_128X64.entry(),
            blockwise::PERSISTENT_128X128.entry(),
        ];
        const ROW_WISE_PROMOTED_TILES: [&str; 2] = [
            promoted::PERSISTENT_128X64.entry(),
            promoted::PERSISTENT_128X128.entry(),
        ];
        match self.scales {
            Scales::PerTensor => &TILES,
            Scales::RowWise => &ROW_WISE_TILES,
            Scales::BlockWise => &BLOCK_WISE_TILES,
            Scales::RowWisePromoted => &ROW_WISE_PROMOTED_TILES,
        }
    }

    /// The bf16 tiles' prediction for the product of the same steps (half the k).
    fn predicted(&self, gpu: &Gpu, size: Size) -> Option<Choice> {
        let [m, n, k] = size.0;
        persistent_tile(self, gpu, Size([m, n, k.div_ceil(2)]), kernels::matmul_fp8::TILE_RULE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference of a small product by hand: the value, scaled, and a tolerance that grows
    /// with the sums' magnitudes and is at least C's rounding.
    #[test]
    fn the_reference_scales_the_exact_sum() {
        // A = [1, 2], Bᵀ rows [3, 4] and [-0.5, 0.25]: C = [11, 0] before the scales.
        let (a, bt) = ([1.0, 2.0], [3.0, 4.0, -0.5, 0.25]);
        let (value, tolerance) = expected_at(&a, &bt, 2, &[1.5], (0, 0));
        assert_eq!(value, 16.5);
        assert!((BF16_UNIT_ROUNDOFF * 16.5..0.1).contains(&tolerance), "{tolerance}");
        let (value, tolerance) = expected_at(&a, &bt, 2, &[1.5], (0, 1));
        assert_eq!(value, 0.0);
        assert!(tolerance > 0.0 && tolerance < 1e-3, "{tolerance}");
    }

    /// Row-wise scales: each element takes its row's factor of A and its column's of B.
    #[test]
    fn the_reference_takes_each_rows_and_columns_factor() {
        // A rows [1, 2] and [3, 0], Bᵀ rows [3, 4] and [1, 1]: A·B = [[11, 3], [9, 3]].
        let (a, bt) = ([1.0, 2.0, 3.0, 0.0], [3.0, 4.0, 1.0, 1.0]);
        let scales: (&[f32], &[f32]) = (&[0.5, 2.0], &[3.0, 0.25]);
        for ((row, col), want) in [((0, 0), 16.5), ((0, 1), 0.375), ((1, 0), 54.0), ((1, 1), 1.5)] {
            let factors = factors_at(Scales::RowWise, scales, (2, 2), (row, col));
            assert_eq!(expected_at(&a, &bt, 2, &factors, (row, col)).0, want, "({row}, {col})");
        }
    }

    /// Block scales: each block of 128 of k's sum takes its own factor, A's by row and block, B's
    /// by block of 128 columns and block; the tolerance grows with the blocks' scaled sums.
    #[test]
    fn the_reference_scales_each_block_of_k_on_its_own() {
        // A: 2 rows, k = 130 (two blocks: 128 and 2); Bᵀ: 130 rows (columns of C), k = 130.
        let (m, n, k) = (2, 130, 130);
        let a: Vec<f32> = (0..m * k).map(|i| if i % k < 128 { 1.0 } else { 2.0 }).collect();
        let bt: Vec<f32> = (0..n * k).map(|i| if i / k == 129 { 0.5 } else { 1.0 }).collect();
        // A's factors block by block (m each), B's by block of columns (2 blocks of k each).
        let scale_a = [1.0, 2.0, 0.5, 0.25];
        let scale_b = [3.0, 4.0, 5.0, 6.0];
        let at = |row, col| {
            let factors = factors_at(Scales::BlockWise, (&scale_a, &scale_b), (m, k), (row, col));
            expected_at(&a, &bt, k, &factors, (row, col))
        };
        // Row 0, column 0: block 0 sums 128 at 1·3, block 1 sums 4 at 0.5·4.
        assert_eq!(at(0, 0).0, 128.0 * 3.0 + 4.0 * 2.0);
        // Row 1, column 129 (B's second block of columns): 64 at 2·5, then 2 at 0.25·6.
        assert_eq!(at(1, 129).0, 64.0 * 10.0 + 2.0 * 1.5);
        let (value, tolerance) = at(0, 0);
        assert!(
            (BF16_UNIT_ROUNDOFF * value..0.1 * value).contains(&tolerance),
            "{tolerance}"
        );
    }

    /// Every code drawn is finite, the guard is NaN, and every finite code turns up.
    #[test]
    fn random_codes_cover_the_finite_codes_and_end_in_nan() {
        let codes = random_codes(9, 100_000);
        let (drawn, guard) = codes.split_at(100_000);
        assert!(drawn.iter().all(|&c| !E4M3(c).is_nan()));
        assert!(guard.iter().all(|&c| E4M3(c).is_nan()));
        let mut seen = [false; 256];
        drawn.iter().for_each(|&c| seen[c as usize] = true);
        assert_eq!(seen.iter().filter(|&&s| s).count(), 254);
    }
}
