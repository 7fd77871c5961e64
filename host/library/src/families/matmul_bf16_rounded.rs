//! The host side of the bf16-output matmul family: its safe launch (with the partial sums of the
//! persistent rung's runs of k), cuBLAS's bf16 GEMM with bf16 C as its baseline, and the f64 check
//! of [`super::matmul::Oracle`] widened by bf16's one rounding.

use super::auto::{Rung, Target, small_m_rung};
use super::choice::Choice;
use super::elementwise::check_shape;
use super::matmul::Oracle;
use super::matmul_bf16::{
    BF16_BYTES, Bf16Case, EDGE_SHAPES, ProductOutput, boxes, persistent_tile, swapped_rung, tensor_maps,
};
use super::{Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Plan, Size, Sizes, Work, check_len};
use crate::cublas::Precision;
use kernels::Source;
use kernels::matmul_bf16::rounded::{
    CLUSTERED, FAMILY, MatmulBf16Rounded, PERSISTENT, PERSISTENT_128X64, PERSISTENT_128X128, SMALL_M, SWAPPED,
    arrivals_needed, partials_needed,
};
use kernels::matmul_bf16::small_m;
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Backend, Gpu, Result};

/// `C = A·B` with `kernel`: checks that A and B hold m·k and k·n bf16 and C m·n bf16 (each as
/// `u16` bits), and that they live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<MatmulBf16Rounded>,
    source: Source,
    problem: &MatmulBf16Rounded,
    a: &impl Array<u16>,
    b: &impl Array<u16>,
    c: &mut impl Array<u16>,
) -> Result<()> {
    let (a_len, b_len, c_len) = problem.summed().lengths();
    check_len("A", a.len(), a_len)?;
    check_len("B", b.len(), b_len)?;
    check_len("C", c.len(), c_len)?;
    let (a_address, b_address) = (a.address(backend)?, b.address(backend)?);
    let sizes = (problem.m, problem.n, problem.k);
    // The copies and the partial sums stay held until the launch is enqueued.
    let (maps, _copies) = tensor_maps(backend, boxes(kernel.entry()), sizes, (a_address, b_address))?;
    let shape = backend.launch_shape_from(source.module(), kernel, problem)?;
    let arrivals = backend.zeroed_counters(arrivals_needed(kernel, problem, shape.grid))?;
    let partials = backend.partial_sums(partials_needed(kernel, problem, shape.grid))?;
    let args = (
        a_address as *const Bf16,
        b_address as *const Bf16,
        c.address_mut(backend)? as *mut Bf16,
        problem.m,
        problem.n,
        problem.k,
        maps,
        arrivals.as_ptr(),
        partials.as_ptr(),
    );
    // SAFETY: each pointer is its array's address on this backend, and A, B and C hold the m·k,
    // k·n and m·n bf16 the kernels read or write for this problem; `arrivals` and `partials` hold
    // the zeroed counters and the partial sums the persistent rung needs for `shape`, the launch
    // shape `launch_from` would compute.
    unsafe { backend.launch_fn(source.module(), &kernel.code, &shape, args, &[a, b, &*c]) }
}

/// The host side of the bf16-output matmul family.
pub struct MatmulBf16RoundedDemo;

/// bf16's unit roundoff: half its spacing at 1 (8 significant bits).
const BF16_UNIT_ROUNDOFF: f64 = 1.0 / 256.0;

/// The bf16 ladder's edge shapes, and where runs of k meet in the partial sums: the persistent
/// rung's (C's rows 8-byte aligned and not: n of 515 and 1030), the small-m rungs' (one row, four,
/// and seven in two row groups).
const ROUNDED_EDGE_SHAPES: [[usize; 3]; 5] = [
    [33, 515, 2051],
    [130, 1030, 1100],
    [1, 300, 2051],
    [4, 515, 1500],
    [7, 260, 4096],
];

impl FamilyDemo for MatmulBf16RoundedDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(Precision::Bf16Rounded.baseline_name())
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [m, n, k] = size.0;
        let problem = MatmulBf16Rounded::new(m, n, k)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let (a_len, b_len, c_len) = problem.summed().lengths();
        let operands = BF16_BYTES * (a_len + b_len + 2 * GUARD) as u64;
        let output = BF16_BYTES * (c_len + GUARD) as u64;
        Ok(Plan {
            work: Work {
                bytes: (BF16_BYTES * (a_len + b_len + c_len) as u64) as f64,
                flops: problem.summed().flops(),
                bound: Bound::Compute,
            },
            x: m as f64,
            // The operands as f32 and as bf16, the read-back C, its poison and widened copy, the
            // reference.
            host_bytes: 3 * operands + 4 * output + 16 * c_len as u64,
            device_bytes: operands + output,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [m, n, k] = size.0;
        MatmulBf16Rounded::new(m, n, k)?;
        Ok(Box::new(Bf16Case::<u16>::new(backend, (m, n, k), rng, sets)?))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "C = A·B on the tensor cores: bf16 A (m×k) and B (k×n), f32 sums, C rounded to bf16 (PyTorch's bf16 a @ b), against cuBLAS's bf16 GEMM with bf16 C",
            default: Size([8192, 8192, 8192]),
            emulator_cap: Size([256, 256, 256]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES
                .iter()
                .chain(&ROUNDED_EDGE_SHAPES)
                .map(|&s| Size(s))
                .collect(),
            // 4096³ whole waves of tiles; 4096 × 1000 × 333 and 128 × 4096 × 4096 runs of k; 2100
            // × 4100 a last wave part-empty on 132 SMs.
            large: vec![
                Size([4096, 4096, 4096]),
                Size([4096, 1000, 333]),
                Size([128, 4096, 4096]),
                Size([2100, 4100, 1000]),
            ],
            // Square sides, then the shapes where C's bytes weigh most (vision and encoder
            // transformers: k of 768 and 1024) and decoding's few rows.
            bench: {
                let square = [1024, 4096, 8192].map(|s| Size([s, s, s]));
                let other = [
                    [12608, 768, 768],
                    [16384, 2304, 768],
                    [12608, 4096, 1024],
                    [128, 4096, 4096],
                    [1, 4096, 4096],
                ];
                square.into_iter().chain(other.map(Size)).collect()
            },
            smoke: Size([70, 136, 200]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for MatmulBf16RoundedDemo {
    fn fastest_rung(&self, target: Target, size: Size) -> Option<Rung> {
        if let Some(rung) = swapped_rung(target, size, SWAPPED.entry()) {
            return Some(rung);
        }
        if let Some(rung) = small_m_rung(size, SMALL_M.map(|kernel| kernel.entry()), small_m::MAX_ROWS) {
            return Some(rung);
        }
        // On sm_90a the persistent rung's tiles are configurations, as the f32 family's.
        (!target.sm90a).then_some(Rung {
            entry: "matmul_bf16_rounded_pipelined",
            why: "the mma.sync ring: the fastest rung without sm_90a's PTX",
        })
    }

    fn configurations(&self) -> &'static [&'static str] {
        const TILES: [&str; 4] = [
            PERSISTENT_128X64.entry(),
            PERSISTENT_128X128.entry(),
            PERSISTENT.entry(),
            CLUSTERED.entry(),
        ];
        &TILES
    }

    fn predicted(&self, gpu: &Gpu, size: Size) -> Option<Choice> {
        persistent_tile(self, gpu, size, kernels::matmul_bf16::specialized::TILE_RULE)
    }
}

/// C of bf16 bits, for the case both bf16 families share.
impl ProductOutput for u16 {
    const PRECISION: Precision = Precision::Bf16Rounded;
    const POISON: u16 = 0x7fc1;

    fn widen(self) -> f32 {
        Bf16(self).to_f32()
    }

    fn reference(oracle: Oracle) -> Oracle {
        oracle.rounded(BF16_UNIT_ROUNDOFF)
    }

    fn launch(
        backend: &Backend,
        kernel: usize,
        source: Source,
        (m, n, k): (u32, u32, u32),
        (a, b): &(Buffer<u16>, Buffer<u16>),
        c: &mut Buffer<u16>,
    ) -> Result<()> {
        launch(
            backend,
            &FAMILY.kernels[kernel],
            source,
            &MatmulBf16Rounded { m, n, k },
            a,
            b,
            c,
        )
    }
}
