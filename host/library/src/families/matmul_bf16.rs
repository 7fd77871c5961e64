//! The bf16 matmul family's host side: its safe launch, cuBLAS's bf16 GEMM (f32 sums and output)
//! as its baseline, and the f64 check of [`super::matmul::Oracle`] on the operands as given (a
//! product of two bf16 is exact, so only the f32 accumulation is allowed for).

use super::auto::{Rung, Target, small_m_rung};
use super::choice::Choice;
use super::elementwise::check_shape;
use super::matmul::Oracle;
use super::tma_operands::operand_maps;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    guarded_inputs, kernel_index, substream,
};
use crate::cublas::Cublas;
use crate::cublas::Precision;
use cudarc::driver::DeviceRepr;
use kernels::Source;
use kernels::matmul_bf16::{FAMILY, MatmulBf16, TensorMaps, small_m, specialized, swapped};
use kernels::reference::Operands;
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::array::{Array, Buffer, Element};
use ptxkit_runtime::{Backend, Gpu};
use ptxkit_runtime::{Error, Result};
use ptxkit_runtime::{PaddedCopies, bf16_swizzled_pitched};

/// `C = A·B` with `kernel`: checks that A and B hold m·k and k·n bf16 (as `u16` bits) and C m·n
/// f32, and that they live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<MatmulBf16>,
    source: Source,
    problem: &MatmulBf16,
    a: &impl Array<u16>,
    b: &impl Array<u16>,
    c: &mut impl Array<f32>,
) -> Result<()> {
    let (a_len, b_len, c_len) = problem.lengths();
    check_len("A", a.len(), a_len)?;
    check_len("B", b.len(), b_len)?;
    check_len("C", c.len(), c_len)?;
    let (a_address, b_address) = (a.address(backend)?, b.address(backend)?);
    // The copies stay locked until the launch is enqueued.
    let sizes = (problem.m, problem.n, problem.k);
    let (maps, _copies) = tensor_maps(backend, boxes(kernel.entry()), sizes, (a_address, b_address))?;
    // The zeroed counters of the rungs that split k, where the grid does (none otherwise).
    let shape = backend.launch_shape_from(source.module(), kernel, problem)?;
    let arrivals = backend.zeroed_counters(kernels::matmul_bf16::arrivals_needed(kernel, problem, shape.grid))?;
    let args = (
        a_address as *const Bf16,
        b_address as *const Bf16,
        c.address_mut(backend)? as *mut f32,
        problem.m,
        problem.n,
        problem.k,
        maps,
        arrivals.as_ptr(),
    );
    // SAFETY: each pointer is its array's address on this backend, and A, B and C hold the m·k, k·n
    // and m·n elements the kernels read or write for this problem (bf16 is u16's size); `arrivals`
    // holds the zeroed counters the small-m rung needs for `shape`, the launch shape `launch_from`
    // would compute.
    unsafe { backend.launch_fn(source.module(), &kernel.code, &shape, args, &[a, b, &*c]) }
}

/// The boxes (A's, B's) that `entry` (a kernel of either bf16 family) copies A and B in by TMA;
/// `None` for the kernels that read no maps.
pub(super) fn boxes(entry: &str) -> Option<TmaBoxes> {
    use kernels::matmul_bf16::rounded;
    let swapped_rung = [swapped::KERNEL.entry(), rounded::SWAPPED.entry()];
    let tiles = [
        specialized::KERNEL_TMA.entry(),
        specialized::KERNEL_PERSISTENT.entry(),
        specialized::KERNEL_PERSISTENT_128X128.entry(),
        specialized::KERNEL_PERSISTENT_128X64.entry(),
        specialized::KERNEL_CLUSTERED.entry(),
        specialized::KERNEL_CLUSTERED_128X128.entry(),
        rounded::PERSISTENT.entry(),
        rounded::PERSISTENT_128X128.entry(),
        rounded::PERSISTENT_128X64.entry(),
        rounded::CLUSTERED.entry(),
        rounded::CLUSTERED_128X128.entry(),
    ];
    if swapped_rung.contains(&entry) {
        Some((swapped::A_BOX, swapped::B_BOX))
    } else if tiles.contains(&entry) {
        Some((specialized::A_BOX, specialized::B_BOX))
    } else {
        None
    }
}

/// A's and B's TMA boxes, (columns, rows) each.
pub(super) type TmaBoxes = ((u32, u32), (u32, u32));

/// The tensor maps of A and B in `boxes` for a TMA kernel (`Some`, from [`boxes`]) on a GPU (of
/// row-padded copies where TMA cannot read them in place), with the copies; null otherwise (the
/// kernels that read no maps, and the emulator, where the TMA kernels copy by `cp.async`).
pub(super) fn tensor_maps<'g>(
    backend: &'g Backend,
    boxes: Option<TmaBoxes>,
    (m, n, k): (u32, u32, u32),
    operands: (u64, u64),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    match (backend, boxes) {
        (Backend::Gpu(gpu), Some(boxes)) => operand_maps(
            (backend, gpu),
            bf16_swizzled_pitched,
            BF16_BYTES,
            (m, n, k),
            operands,
            boxes,
        ),
        _ => Ok((std::ptr::null(), None)),
    }
}

/// The host side of the bf16 matmul family.
pub struct MatmulBf16Demo;

/// One and prime sides; k and n multiples of 8 and not (the 16-byte copies and the plain loads);
/// k past four 32-deep steps (the ring wraps), with and without a partial last step; edge tiles
/// in m and n; and for the small-m rung, one row against B with an odd n and k split (the
/// element-wise path) and 12 rows (two row groups) on the 16-byte path with k split.
pub(super) const EDGE_SHAPES: [[usize; 3]; 11] = [
    [1, 1, 1],
    [31, 33, 17],
    [33, 31, 130],
    [64, 136, 200],
    [130, 72, 256],
    [129, 255, 9],
    [200, 8, 328],
    [8, 200, 96],
    [17, 65, 131],
    [1, 1027, 515],
    [12, 520, 2048],
];

/// Bytes of one bf16.
pub(super) const BF16_BYTES: u64 = 2;

impl FamilyDemo for MatmulBf16Demo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(Precision::Bf16.baseline_name())
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [m, n, k] = size.0;
        let problem = MatmulBf16::new(m, n, k)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let (a_len, b_len, c_len) = problem.lengths();
        let operands = BF16_BYTES * (a_len + b_len + 2 * GUARD) as u64;
        let output = 4 * (c_len + GUARD) as u64;
        Ok(Plan {
            work: Work {
                bytes: (BF16_BYTES * (a_len + b_len) as u64 + 4 * c_len as u64) as f64,
                flops: problem.flops(),
                bound: Bound::Compute,
            },
            x: m as f64,
            // The operands as f32 and as bf16, the read-back C and its poison, the reference.
            host_bytes: 3 * operands + 3 * output + 16 * c_len as u64,
            device_bytes: operands + output,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [m, n, k] = size.0;
        MatmulBf16::new(m, n, k)?;
        Ok(Box::new(Bf16Case::<f32>::new(backend, (m, n, k), rng, sets)?))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "C = A·B on the tensor cores: bf16 A (m×k) and B (k×n), f32 sums and C, against cuBLAS's bf16 GEMM",
            default: Size([8192, 8192, 8192]),
            emulator_cap: Size([256, 256, 256]),
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
            // Square sides 1024 to 8192, then a wide and a tall output with a long k and an odd shape.
            bench: {
                let square = [1024, 2048, 4096, 8192].map(|s| Size([s, s, s]));
                // Decoding: one row, four (the small-m rung) and sixteen (its mma.sync rung).
                let other = [
                    [8192, 2048, 4096],
                    [2048, 8192, 8192],
                    [4097, 3073, 2049],
                    [1, 28672, 4096],
                    [4, 28672, 4096],
                    [16, 28672, 4096],
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

impl KernelChoice for MatmulBf16Demo {
    fn fastest_rung(&self, target: Target, size: Size) -> Option<Rung> {
        if let Some(rung) = swapped_rung(target, size, swapped::KERNEL.entry()) {
            return Some(rung);
        }
        if let Some(rung) = small_m_rung(size, small_m::KERNELS.map(|kernel| kernel.entry()), small_m::MAX_ROWS) {
            return Some(rung);
        }
        // On sm_90a the persistent rung's tiles are configurations ([`persistent_tile`]).
        (!target.sm90a).then_some(Rung {
            entry: "matmul_bf16_pipelined",
            why: "the mma.sync ring: the fastest rung without sm_90a's PTX",
        })
    }

    fn configurations(&self) -> &'static [&'static str] {
        const TILES: [&str; 4] = [
            specialized::KERNEL_PERSISTENT_128X64.entry(),
            specialized::KERNEL_PERSISTENT_128X128.entry(),
            specialized::KERNEL_PERSISTENT.entry(),
            specialized::KERNEL_CLUSTERED.entry(),
        ];
        &TILES
    }

    fn predicted(&self, gpu: &Gpu, size: Size) -> Option<Choice> {
        persistent_tile(self, gpu, size, specialized::TILE_RULE)
    }
}

/// The most rows of A the swapped-role rung takes in `auto`: two row groups, whose blocks of a
/// strip run side by side and read its B once from memory (the second from the L2). At 32 rows it
/// took 0.68–0.70 of the 128×128 tile's time (docs/perf-log.md, change 154).
pub(super) const SWAPPED_MAX_ROWS: usize = 2 * swapped::ROWS as usize;

/// The swapped-role rung (`entry`, of either bf16 family) on sm_90a for A of 2 to
/// [`SWAPPED_MAX_ROWS`] rows: past the small-m rungs' bound (a 128-row tile copies and multiplies
/// eight times the rows there are), and below it where A's and B's rows are whole 16-byte chunks
/// (TMA reads them in place; else the small-m rungs, which need no row-padded copy). One row stays
/// on the small-m rung, as fast there (docs/perf-log.md, change 153).
pub(super) fn swapped_rung(target: Target, size: Size, entry: &'static str) -> Option<Rung> {
    let [m, n, k] = size.0;
    let rows_in_place = n.is_multiple_of(8) && k.is_multiple_of(8);
    let takes = m <= SWAPPED_MAX_ROWS && (m > small_m::MAX_ROWS as usize || (m > 1 && rows_in_place));
    (target.sm90a && takes).then_some(Rung {
        entry,
        why: "A of 2 to 32 rows on sm_90a: Cᵀ = Bᵀ·Aᵀ on wgmma's 64×16 (16 rows a block), B streamed once by TMA in strips of columns and runs of k",
    })
}

/// The persistent rung's tile (`family`'s configurations: 128×64, 128×128, 128×256, then where
/// the family has it 128×256 in clusters of two) predicted by `rule` to finish `size` sooner on
/// `gpu` ([`specialized::TileRule::predicted_twentieths`], one block per SM); of equals, the
/// wider. The 128×256 tiles go in clusters where the rule says they pay (k long over many waves).
pub(super) fn persistent_tile(
    family: &dyn FamilyDemo,
    gpu: &Gpu,
    size: Size,
    rule: specialized::TileRule,
) -> Option<Choice> {
    let [m, n, k] = size.0;
    let problem = MatmulBf16::new(m, n, k).ok()?;
    let sms = gpu.info().sm_count;
    let [wide, narrow, narrowest] = rule.predicted_twentieths(&problem, sms);
    let (narrowest_entry, narrow_entry, wide_entry, clustered_entry) = match *family.choice().configurations() {
        [narrowest, narrow, wide, clustered] => (narrowest, narrow, Some(wide), Some(clustered)),
        [narrowest, narrow, wide] => (narrowest, narrow, Some(wide), None),
        [narrowest, narrow] => (narrowest, narrow, None, None),
        _ => return None,
    };
    // Of equals the first, the wider; a family without the 128×256 tile chooses among the others.
    let (entry, _) = [
        (wide_entry, wide),
        (Some(narrow_entry), narrow),
        (Some(narrowest_entry), narrowest),
    ]
    .into_iter()
    .filter_map(|(entry, time)| Some((entry?, time)))
    .min_by_key(|&(_, time)| time)?;
    let steps = |twentieths: u64| twentieths as f64 / 20.0;
    let predicted = format!(
        "the busiest SM predicted at {:.1} steps of a 128×256 tile on 128×64 tiles, {:.1} on 128×128, {:.1} on 128×256 (its steps of k and its items' fills and stores, on {sms} SMs)",
        steps(narrowest),
        steps(narrow),
        steps(wide),
    );
    let clustered = clustered_entry.filter(|_| Some(entry) == wide_entry && rule.clusters_pay(&problem, sms));
    let (entry, why) = if let Some(clustered_entry) = clustered {
        (
            clustered_entry,
            format!(
                "{predicted}; k of at least {} steps over at least {} waves of them: in clusters of two that copy B once for both",
                rule.clusters_min_steps, rule.clusters_min_waves
            ),
        )
    } else {
        (entry, predicted)
    };
    Some(Choice {
        kernel: kernel_index(family, entry)?,
        entry,
        why,
    })
}

/// One set of A and B (bf16 bits) on the backend.
type OperandSet = (Buffer<u16>, Buffer<u16>);

/// What C of a bf16 product holds, for the case both bf16 families share: the f32 sums
/// (`matmul_bf16`), or bf16 bits (`matmul_bf16_rounded`).
pub(super) trait ProductOutput: Element + DeviceRepr + Default {
    /// cuBLAS with this C: the family's baseline.
    const PRECISION: Precision;
    /// NaN: an element never written stays so.
    const POISON: Self;

    /// The element's value.
    fn widen(self) -> f32;

    /// The f64 reference of the product, for this C (one more rounding, where it is narrower).
    fn reference(oracle: Oracle) -> Oracle;

    /// `C = A·B` with kernel `kernel` of this C's family.
    fn launch(
        backend: &Backend,
        kernel: usize,
        source: Source,
        sizes: (u32, u32, u32),
        operands: &OperandSet,
        c: &mut Buffer<Self>,
    ) -> Result<()>;
}

impl ProductOutput for f32 {
    const PRECISION: Precision = Precision::Bf16;
    const POISON: f32 = f32::NAN;

    fn widen(self) -> f32 {
        self
    }

    fn reference(oracle: Oracle) -> Oracle {
        oracle
    }

    fn launch(
        backend: &Backend,
        kernel: usize,
        source: Source,
        (m, n, k): (u32, u32, u32),
        (a, b): &OperandSet,
        c: &mut Buffer<f32>,
    ) -> Result<()> {
        launch(
            backend,
            &FAMILY.kernels[kernel],
            source,
            &MatmulBf16 { m, n, k },
            a,
            b,
            c,
        )
    }
}

/// A bf16 product's case: random bf16 operands A (m×k) and B (k×n), `sets` times with NaN guards
/// past them, C of `C` poisoned, and the f64 reference of the product (f32 values rounded to bf16,
/// so that the reference gets exactly the values the kernels read).
pub(super) struct Bf16Case<'a, C: ProductOutput> {
    backend: &'a Backend,
    sizes: (u32, u32, u32),
    oracle: Oracle,
    inputs: Vec<OperandSet>,
    outputs: Outputs<C>,
    cublas: Option<Cublas>,
}

impl<'a, C: ProductOutput> Bf16Case<'a, C> {
    pub(super) fn new(backend: &'a Backend, (m, n, k): (usize, usize, usize), rng: u64, sets: usize) -> Result<Self> {
        let (a_len, b_len) = (m * k, k * n);
        let bf16 = |values: Vec<f32>| -> (Vec<f32>, Vec<u16>) {
            let bits: Vec<u16> = values.iter().map(|&x| Bf16::from_f32(x).0).collect();
            (bits.iter().map(|&b| Bf16(b).to_f32()).collect(), bits)
        };
        let (a, a_bits) = bf16(guarded_inputs(substream(rng, 4), a_len));
        let (b, b_bits) = bf16(guarded_inputs(substream(rng, 5), b_len));
        let oracle = Oracle::new(&a[..a_len], &b[..b_len], (m, n, k), substream(rng, 6), Operands::F32);
        let inputs = (0..sets.max(1))
            .map(|_| Ok((Buffer::upload(backend, &a_bits)?, Buffer::upload(backend, &b_bits)?)))
            .collect::<Result<Vec<_>>>()?;
        let cublas = match backend {
            Backend::Gpu(gpu) => Some(Cublas::new(gpu)?),
            Backend::Emu => None,
        };
        Ok(Bf16Case {
            backend,
            // The family's `new` checked the sizes against 32-bit indices.
            sizes: (m as u32, n as u32, k as u32),
            oracle: C::reference(oracle),
            inputs,
            outputs: Outputs::new(backend, m * n, GUARD, C::POISON, sets)?,
            cublas,
        })
    }
}

impl<C: ProductOutput> Case for Bf16Case<'_, C> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        C::launch(
            self.backend,
            kernel,
            source,
            self.sizes,
            &self.inputs[set],
            self.outputs.get_mut(set),
        )
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cublas.as_ref().map(|_| C::PRECISION.baseline_name())
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cublas = self.cublas.as_ref().ok_or_else(|| Error::NeedsGpu {
            what: "cuBLAS".into(),
            why: "it is a GPU library",
        })?;
        let (a, b) = &self.inputs[set];
        cublas.gemm(self.backend, C::PRECISION, self.sizes, a, b, self.outputs.get_mut(set))
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (m, n, _) = self.sizes;
        let c_len = m as usize * n as usize;
        let c: Vec<f32> = self
            .outputs
            .read(self.backend, set)?
            .into_iter()
            .map(C::widen)
            .collect();
        let summary = self.oracle.check(&c[..c_len])?;
        check_guard(&c, c_len)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::matmul_bf16::rounded;

    /// Every kernel of both families that copies its operands by TMA (the tiles' and the swapped
    /// rung's, as they are named) has its boxes, each in the box of its own tile, and no other
    /// kernel has any: a TMA kernel launched without maps would read through a null pointer.
    #[test]
    fn the_tma_kernels_of_both_families_and_only_they_have_boxes() {
        let entries = FAMILY.kernels.iter().map(|k| k.entry());
        let rounded_entries = rounded::FAMILY.kernels.iter().map(|k| k.entry());
        for entry in entries.chain(rounded_entries) {
            let expected = if entry.contains("swapped") {
                Some((swapped::A_BOX, swapped::B_BOX))
            } else if entry.contains("persistent") || entry.contains("clustered") || entry.ends_with("_tma") {
                Some((specialized::A_BOX, specialized::B_BOX))
            } else {
                None
            };
            assert_eq!(boxes(entry), expected, "{entry}");
        }
        assert!(boxes(specialized::KERNEL_TMA.entry()).is_some());
    }
}
