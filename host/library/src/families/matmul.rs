//! The matmul families' host side: their safe launch, cuBLAS in each ladder's precision as its
//! baseline, and the f64 check (every element for small products, sampled elements and a NaN scan
//! for large ones) on the operands as each ladder reads them: [`MATMUL`], the f32 ladder against
//! SGEMM, and [`MATMUL_TC`], the tensor cores' (TF32 operands) against cuBLAS's TF32 mode.

use super::auto::{Rung, Target, small_m_rung};
use super::choice::Grid;
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    guarded_inputs, substream,
};
use crate::cublas::Cublas;
use crate::cublas::Precision;
use kernels::Source;
use kernels::matmul::{FAMILY, Matmul, multistage, small_m, small_m16, split_k, warp_tiled};
use kernels::matmul_tc::{self, MatmulTc};
use kernels::reference::{self, Expected, Operands};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Gpu;
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `C = A·B` with `kernel`, any matmul kernel: checks that A, B and C hold m·k, k·n and m·n
/// elements and live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Matmul>,
    source: Source,
    problem: &Matmul,
    a: &impl Array<f32>,
    b: &impl Array<f32>,
    c: &mut impl Array<f32>,
) -> Result<()> {
    let (a_len, b_len, c_len) = problem.lengths();
    check_len("A", a.len(), a_len)?;
    check_len("B", b.len(), b_len)?;
    check_len("C", c.len(), c_len)?;
    let (a_ptr, b_ptr) = (a.address(backend)? as *const f32, b.address(backend)? as *const f32);
    let c_ptr = c.address_mut(backend)? as *mut f32;
    // Split-k's zeroed counters, a u32 per tile of C where this launch's grid splits k (none
    // otherwise).
    let shape = backend.launch_shape_from(source.module(), kernel, problem)?;
    let arrivals = backend.zeroed_counters(kernels::matmul::arrivals_needed(kernel, shape.grid))?;
    let args = (a_ptr, b_ptr, c_ptr, problem.m, problem.n, problem.k, arrivals.as_ptr());
    // SAFETY: each pointer is its array's address on this backend, and A, B and C hold the m·k,
    // k·n and m·n elements every matmul kernel reads or writes for this problem over `shape`, the
    // launch shape `launch_from` would compute; `arrivals` holds the zeroed counters split-k needs
    // for its grid.
    unsafe { backend.launch_fn(source.module(), &kernel.code, &shape, args, &[a, b, &*c]) }
}

/// The host side of a matmul family: its kernels, and how they read their operands.
pub struct MatmulDemo {
    ladder: Ladder,
    operands: Operands,
    /// The baseline's precision; its operands read as `Operands::Tf32Unstated` where that is TF32.
    baseline: Precision,
}

/// The f32 ladder, against cuBLAS SGEMM.
pub static MATMUL: MatmulDemo = MatmulDemo {
    ladder: Ladder::F32(&FAMILY),
    operands: Operands::F32,
    baseline: Precision::F32,
};

/// The tensor-core ladder: TF32 operands, f32 accumulation.
pub static MATMUL_TC: MatmulDemo = MatmulDemo {
    ladder: Ladder::Tc(&matmul_tc::FAMILY),
    operands: Operands::Tf32,
    baseline: Precision::Tf32,
};

/// A ladder's kernels: the f32 ladder's, or the tensor cores' (whose problem carries the
/// persistent grid and whose launch passes tensor maps).
#[derive(Clone, Copy)]
enum Ladder {
    F32(&'static Family<Matmul>),
    Tc(&'static Family<MatmulTc>),
}

/// The tensor cores' problem of `sizes`.
fn tc_problem(sizes: &Matmul) -> Result<MatmulTc> {
    Ok(MatmulTc::new(sizes.m as usize, sizes.n as usize, sizes.k as usize)?)
}

impl MatmulDemo {
    fn is_f32(&self) -> bool {
        self.operands == Operands::F32
    }
}

/// Above this many multiply-adds the f64 reference checks sampled elements instead of all of them.
const FULL_CHECK_MAX_MACS: u64 = 1 << 28;
/// Elements checked when sampling, besides the four corners.
const SAMPLES: usize = 4096;

/// Single elements, one below, at and above the 32-wide tile, K = 1, long and thin in each
/// dimension, rectangular shapes, and a grid of 144 blocks with no side a multiple of any tile.
const EDGE_SHAPES: [[usize; 3]; 16] = [
    [1, 1, 1],
    [31, 31, 31],
    [32, 32, 32],
    [33, 33, 33],
    [33, 31, 1],
    [1000, 33, 31],
    [31, 1000, 3],
    [2, 3, 1000],
    [64, 96, 48],
    [17, 65, 130],
    [509, 257, 131],
    // The 128×128 tiles and 8-deep slices of the register-blocked kernel: exact multiples, and one
    // past or short of each.
    [128, 256, 16],
    [129, 255, 9],
    // Split-k on the emulator's 8 blocks: 2 tiles, k split 4 ways on the 16-byte path.
    [40, 68, 1024],
    // The small-m kernels: one row against B with an odd n and k split (the element-wise path),
    // and 12 rows (two row groups of 8) on the 16-byte path with k split.
    [1, 1027, 515],
    [12, 520, 2048],
];

impl FamilyDemo for MatmulDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        match self.ladder {
            Ladder::F32(family) => family,
            Ladder::Tc(family) => family,
        }
    }

    fn extents(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(self.baseline.baseline_name())
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [m, n, k] = size.0;
        let problem = Matmul::new(m, n, k)?;
        match self.ladder {
            Ladder::F32(family) => family
                .kernels
                .iter()
                .try_for_each(|kernel| check_shape(kernel, &problem))?,
            Ladder::Tc(family) => {
                let tc = MatmulTc::new(m, n, k)?;
                family.kernels.iter().try_for_each(|kernel| check_shape(kernel, &tc))?
            }
        }
        let (a_len, b_len, c_len) = problem.lengths();
        let arrays = 4 * (a_len + b_len + c_len + 3 * GUARD) as u64;
        let reference = if macs(&problem) <= FULL_CHECK_MAX_MACS {
            16 * c_len as u64
        } else {
            16 * SAMPLES as u64
        };
        Ok(Plan {
            work: Work {
                bytes: 4.0 * (a_len + b_len + c_len) as f64,
                flops: problem.flops(),
                bound: Bound::Compute,
            },
            x: m as f64,
            // The inputs, the read-back C and its poison, the reference.
            host_bytes: arrays + 8 * c_len as u64 + reference,
            // A set's A and B, and its C; the baseline writes into the same C.
            device_bytes: arrays,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = problem(size)?;
        let (a_len, b_len, c_len) = problem.lengths();
        let a = guarded_inputs(substream(rng, 4), a_len);
        let b = guarded_inputs(substream(rng, 5), b_len);
        let dims = (problem.m as usize, problem.n as usize, problem.k as usize);
        let oracle = Oracle::new(&a[..a_len], &b[..b_len], dims, substream(rng, 6), self.operands);
        // cuBLAS's TF32 conversion is its own: its result is checked with the wider bound.
        let baseline_oracle = (self.baseline == Precision::Tf32).then(|| {
            Oracle::new(
                &a[..a_len],
                &b[..b_len],
                dims,
                substream(rng, 6),
                Operands::Tf32Unstated,
            )
        });
        let inputs = (0..sets.max(1))
            .map(|_| Ok((Buffer::upload(backend, &a)?, Buffer::upload(backend, &b)?)))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, c_len, GUARD, f32::NAN, sets)?;
        let cublas = match backend {
            Backend::Gpu(gpu) => Some(Cublas::new(gpu)?),
            _ => None,
        };
        let tc = tc_problem(&problem)?;
        Ok(Box::new(MatmulCase {
            ladder: self.ladder,
            backend,
            problem,
            tc,
            oracle,
            baseline_oracle,
            baseline_wrote: vec![false; sets.max(1)],
            inputs,
            outputs,
            cublas,
            precision: self.baseline,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.is_f32() {
                "C = A·B (row-major, A m×k, B k×n) with each variant, against cuBLAS SGEMM"
            } else {
                "C = A·B on the tensor cores: TF32 operands (10 mantissa bits), f32 sums, checked against the f64 product of the operands as read"
            },
            default: Size([4096, 4096, 4096]),
            emulator_cap: Size([512, 512, 512]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&s| Size(s)).collect(),
            // 4096³ whole waves of tiles; 4096 × 1000 runs of k; 2100 × 4100 a last wave
            // part-empty on 132 SMs (the tensor-core rungs stream it).
            large: vec![
                Size([4096, 4096, 4096]),
                Size([4096, 1000, 333]),
                Size([2100, 4100, 1000]),
            ],
            // Square sides 1024 to 8192, then the shapes people use besides (m × n × k): tall and wide
            // outputs with a thin side, a small k, a long k, and an odd shape that no tile divides.
            bench: {
                let square = [1024, 2048, 4096, 8192].map(|s| Size([s, s, s]));
                let other = [
                    [8192, 2048, 4096],
                    [8192, 64, 8192],
                    [64, 8192, 8192],
                    [8192, 8192, 64],
                    [256, 256, 65_536],
                    [4097, 3073, 2049],
                    // Decoding: one row, four (the small-m kernels) and sixteen (TF32's mma.sync rung).
                    [1, 28672, 4096],
                    [4, 28672, 4096],
                    [16, 28672, 4096],
                ];
                square.into_iter().chain(other.map(Size)).collect()
            },
            smoke: Size([70, 33, 45]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for MatmulDemo {
    /// The small-m rung for A of a few rows; else, on the tensor cores, the fastest tile rung (the
    /// f32 ladder has tile configurations instead).
    fn fastest_rung(&self, target: Target, size: Size) -> Option<Rung> {
        let (small_m, max_rows) = match self.ladder {
            Ladder::F32(_) => (small_m::KERNELS.map(|kernel| kernel.entry()), small_m::MAX_ROWS),
            Ladder::Tc(_) => (
                matmul_tc::small_m::KERNELS.map(|kernel| kernel.entry()),
                matmul_tc::small_m::MAX_ROWS,
            ),
        };
        if let Some(rung) = small_m_rung(size, small_m, max_rows) {
            return Some(rung);
        }
        if self.is_f32() {
            return (size.0[0] <= small_m16::MAX_ROWS as usize).then_some(Rung {
                entry: small_m16::KERNEL.entry(),
                why: "A of 9-16 rows: B read once, in strips of columns and runs of k, A's rows staged in shared memory",
            });
        }
        if size.0[0] <= kernels::matmul::small_m_mma::ROWS as usize {
            return Some(Rung {
                entry: "matmul_tc_small_m16",
                why: "A of at most 16 rows as the mma.sync's 16: B read once, in strips of columns and runs of k",
            });
        }
        Some(
            if target.sm90a && size.0[0] <= matmul_tc::specialized::BM_NARROW as usize {
                Rung {
                    entry: "matmul_tc_wgmma_128x128",
                    why: "the roles-swapped wgmma with TMA on a persistent grid, on 128-row tiles: C has at most 128 rows",
                }
            } else if target.sm90a {
                Rung {
                    entry: "matmul_tc_wgmma",
                    why: "the roles-swapped wgmma with TMA on a persistent grid",
                }
            } else {
                Rung {
                    entry: "matmul_tc_tf32",
                    why: "the mma.sync kernel: the fastest rung without sm_90a's PTX",
                }
            },
        )
    }

    /// The warp-tiled and multistage tiles, smallest first (of one size, the multistage one
    /// last), then split-k's (k split across the grid). Among tiles that let two blocks reside
    /// the occupancy rule takes the last that fills the GPU: at large shapes multistage's
    /// 128×128, faster than the warp-tiled 128×128 tile at 4096³, 8192³ and 4097×3073×2049
    /// (docs/perf-log.md, change 96, and "Figures moved from code comments"). Multistage's
    /// 128×256, the fastest at 4096³ and 8192³, lets one block reside: a profile takes it, the
    /// rule does not. The rule takes split-k only where the tiles leave SMs without a block
    /// ([`super::choice::MIN_UNSPLIT_BLOCKS_PER_SM`]); a profile may know better.
    fn configurations(&self) -> &'static [&'static str] {
        if !self.is_f32() {
            return &[];
        }
        const TILES: [&str; 13] = [
            warp_tiled::KERNEL_64X64.entry(),
            warp_tiled::KERNEL_128X64.entry(),
            multistage::KERNEL_128X64.entry(),
            warp_tiled::KERNEL_128X128_WIDE.entry(),
            warp_tiled::KERNEL.entry(),
            multistage::KERNEL.entry(),
            warp_tiled::KERNEL_128X256_WIDE.entry(),
            multistage::KERNEL_128X256.entry(),
            split_k::KERNEL.entry(),
            split_k::KERNEL_128X64.entry(),
            split_k::KERNEL_64X128.entry(),
            split_k::KERNEL_MULTISTAGE.entry(),
            split_k::KERNEL_MULTISTAGE_128X64.entry(),
        ];
        &TILES
    }

    /// The grid [`MatmulDemo::prepare`] launches on `gpu`: split-k's counts its ways (grid z).
    fn grid_on(&self, gpu: &Gpu, size: Size, kernel: usize) -> Result<Grid> {
        let problem = problem(size)?;
        Ok(match self.ladder {
            Ladder::F32(family) => {
                let kernel = &family.kernels[kernel];
                let grid = gpu.launch_shape(kernel, &problem)?.grid;
                Grid {
                    blocks: grid.volume(),
                    tiles: grid.x as u64 * grid.y as u64,
                    split: split_k::is_split(kernel),
                }
            }
            Ladder::Tc(family) => Grid::whole(
                gpu.launch_shape(&family.kernels[kernel], &tc_problem(&problem)?)?
                    .grid
                    .volume(),
            ),
        })
    }
}

/// The product of `size`.
fn problem(size: Size) -> Result<Matmul> {
    let [m, n, k] = size.0;
    Ok(Matmul::new(m, n, k)?)
}

fn macs(problem: &Matmul) -> u64 {
    problem.m as u64 * problem.n as u64 * problem.k as u64
}

struct MatmulCase<'a> {
    ladder: Ladder,
    backend: &'a Backend,
    problem: Matmul,
    /// The tensor cores' form of `problem` (their ladder launches it).
    tc: MatmulTc,
    oracle: Oracle,
    /// The baseline's reference where it reads the operands differently from the kernels.
    baseline_oracle: Option<Oracle>,
    /// Per output set, whether the baseline wrote it last.
    baseline_wrote: Vec<bool>,
    inputs: Vec<(Buffer<f32>, Buffer<f32>)>,
    outputs: Outputs<f32>,
    cublas: Option<Cublas>,
    precision: Precision,
}

impl Case for MatmulCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let (a, b) = &self.inputs[set];
        self.baseline_wrote[set] = false;
        let c = self.outputs.get_mut(set);
        match self.ladder {
            Ladder::Tc(family) => {
                super::matmul_tc::launch(self.backend, &family.kernels[kernel], source, &self.tc, a, b, c)
            }
            Ladder::F32(family) => launch(self.backend, &family.kernels[kernel], source, &self.problem, a, b, c),
        }
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cublas.as_ref().map(|_| self.precision.baseline_name())
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cublas = self.cublas.as_ref().ok_or_else(|| Error::NeedsGpu {
            what: "cuBLAS".into(),
            why: "it is a GPU library",
        })?;
        let (a, b) = &self.inputs[set];
        self.baseline_wrote[set] = true;
        let Matmul { m, n, k, .. } = self.problem;
        cublas.gemm(self.backend, self.precision, (m, n, k), a, b, self.outputs.get_mut(set))
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let c_len = self.problem.lengths().2;
        let c = self.outputs.read(self.backend, set)?;
        let oracle = match &self.baseline_oracle {
            Some(oracle) if self.baseline_wrote[set] => oracle,
            _ => &self.oracle,
        };
        let summary = oracle.check(&c[..c_len])?;
        check_guard(&c, c_len)?;
        Ok(summary)
    }
}

/// The elements an m × n × k product's reference checks: `None` (every one) up to
/// [`FULL_CHECK_MAX_MACS`] multiply-adds, else the four corners and [`SAMPLES`] drawn from stream
/// `rng`.
pub(super) fn sampled_positions((m, n, k): (usize, usize, usize), rng: u64) -> Option<Vec<(usize, usize)>> {
    if (m * n * k) as u64 <= FULL_CHECK_MAX_MACS {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(rng);
    let mut positions = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    positions.extend((0..SAMPLES).map(|_| (rng.random_range(0..m), rng.random_range(0..n))));
    Some(positions)
}

/// The f64 reference: every element for small shapes, sampled elements (and a scan for unwritten
/// NaNs everywhere) for large ones.
pub struct Oracle {
    n: usize,
    positions: Option<Vec<(usize, usize)>>,
    expected: Expected,
}

impl Oracle {
    /// The reference for the m×k by k×n product of `a` and `b` as `operands` reads them; samples
    /// drawn from stream `rng`.
    pub fn new(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), rng: u64, operands: Operands) -> Oracle {
        let Some(positions) = sampled_positions((m, n, k), rng) else {
            return Oracle::of(n, None, reference::matmul_of(a, b, (m, n, k), operands));
        };
        let expected = reference::matmul_at_of(a, b, (n, k), &positions, operands);
        Oracle::of(n, Some(positions), expected)
    }

    /// The reference `expected` of a product n wide at `positions` (row, column), or at every
    /// element in order where `None`.
    pub(super) fn of(n: usize, positions: Option<Vec<(usize, usize)>>, expected: Expected) -> Oracle {
        Oracle { n, positions, expected }
    }

    /// The same reference for a C rounded once more, to a type whose unit roundoff is `u` (bf16's):
    /// each tolerance widened by that rounding of a value as far off as the tolerance allows.
    pub fn rounded(mut self, u: f64) -> Oracle {
        let Expected { values, tolerance } = &mut self.expected;
        for (value, tolerance) in values.iter().zip(tolerance.iter_mut()) {
            *tolerance += u * (value.abs() + *tolerance);
        }
        self
    }

    pub fn check(&self, c: &[f32]) -> std::result::Result<String, String> {
        let Some(positions) = &self.positions else {
            reference::check(c, &self.expected).map_err(|m| m.to_string())?;
            return Ok(format!("{} elements within tolerance of the f64 reference", c.len()));
        };
        if let Some(i) = c.iter().position(|v| v.is_nan()) {
            return Err(format!(
                "element ({}, {}) is NaN: never written",
                i / self.n,
                i % self.n
            ));
        }
        let sampled: Vec<f32> = positions.iter().map(|&(row, col)| c[row * self.n + col]).collect();
        reference::check(&sampled, &self.expected).map_err(|m| m.to_string())?;
        Ok(format!(
            "{} sampled elements within tolerance of the f64 reference, none NaN",
            positions.len()
        ))
    }
}
