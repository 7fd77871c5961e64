//! The host side of each kernel family: its safe launch (the problem's argument checks), its random
//! inputs, its check against the f64 reference, and the sizes it runs at. The CLI, the test suites,
//! the benches and the sanitizer sweep drive every family through [`FamilyDemo`] and [`FAMILIES`];
//! none of them names a kernel.
//!
//! A new family adds its module here and its line in [`FAMILIES`]; a new kernel of an existing
//! family needs nothing here.

pub mod atomic_probe;
pub mod attention;
pub mod attention_backward;
pub mod attention_backward_oracle;
pub mod attention_decode;
pub mod attention_oracle;
pub mod auto;
pub mod bank_probe;
pub mod choice;
pub mod conv2d;
pub mod cross_entropy;
pub mod cross_entropy_fused;
pub mod element;
pub mod elementwise;
pub mod gather;
pub mod histogram;
pub mod histogram_f32;
pub mod matmul;
pub mod matmul_bf16;
pub mod matmul_bf16_rounded;
pub mod matmul_fp8;
pub mod matmul_tc;
pub mod mma_probe;
pub mod norm;
pub mod norm_backward;
pub mod norm_backward_fused;
pub mod norm_residual;
pub mod pad_rows;
pub mod profile;
pub mod quantize_fp8;
pub mod reduce;
pub mod reduce_max;
pub mod rows;
pub mod scan;
pub mod scan_i32;
pub mod softmax;
pub mod tma_operands;
pub mod transpose;
pub mod warp_probe;

use kernels::Source;
use ptxkit::{AnyFamily, KernelInfo};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Gpu;
use ptxkit_runtime::{Error, Result};

/// Every family's host side, in the registry's order.
pub static FAMILIES: &[&dyn FamilyDemo] = &[
    &elementwise::VEC_ADD,
    &elementwise::SHARED_MEM_ADD,
    &matmul::MATMUL,
    &matmul::MATMUL_TC,
    &matmul_bf16::MatmulBf16Demo,
    &matmul_bf16_rounded::MatmulBf16RoundedDemo,
    &matmul_fp8::PER_TENSOR,
    &matmul_fp8::ROW_WISE,
    &matmul_fp8::BLOCK_WISE,
    &matmul_fp8::ROW_WISE_PROMOTED,
    &quantize_fp8::QuantizeFp8Demo,
    &pad_rows::PadRowsDemo,
    &attention::ATTENTION,
    &attention::ATTENTION_CAUSAL,
    &attention::ATTENTION_ANY_DIM,
    &attention::ATTENTION_ANY_DIM_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD,
    &attention_backward::ATTENTION_BACKWARD_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_QUERY_SAVED,
    &attention_backward::ATTENTION_BACKWARD_QUERY_SAVED_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_KEYS,
    &attention_backward::ATTENTION_BACKWARD_KEYS_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_STATISTICS,
    &attention_backward::ATTENTION_BACKWARD_STATISTICS_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_STATISTICS_WGMMA,
    &attention_backward::ATTENTION_BACKWARD_STATISTICS_WGMMA_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_WGMMA,
    &attention_backward::ATTENTION_BACKWARD_WGMMA_CAUSAL,
    &attention_backward::ATTENTION_BACKWARD_DELTA,
    &attention_backward::ATTENTION_BACKWARD_FINISH,
    &attention_decode::ATTENTION_DECODE,
    &attention_decode::ATTENTION_DECODE_CAUSAL,
    &attention_decode::CombineDemo,
    &transpose::TransposeDemo,
    &conv2d::Conv2dDemo,
    &gather::GatherDemo,
    &reduce::ReduceDemo,
    &reduce_max::ReduceMaxDemo,
    &rows::ROW_SUM,
    &rows::ROW_MAX,
    &histogram::HistogramDemo,
    &histogram_f32::HistogramF32Demo,
    &scan::ScanDemo,
    &scan_i32::ScanI32Demo,
    &softmax::SoftmaxDemo,
    &norm::LAYER_NORM,
    &norm::RMS_NORM,
    &norm_backward::LAYER_NORM_BACKWARD,
    &norm_backward::RMS_NORM_BACKWARD,
    &norm_backward::LAYER_NORM_WEIGHT_GRAD,
    &norm_backward::RMS_NORM_WEIGHT_GRAD,
    &norm_backward_fused::LAYER_NORM_BACKWARD_FUSED,
    &norm_backward_fused::RMS_NORM_BACKWARD_FUSED,
    &norm_backward_fused::PartialSumsDemo,
    &norm_residual::LAYER_NORM_RESIDUAL,
    &norm_residual::RMS_NORM_RESIDUAL,
    &norm_residual::LAYER_NORM_RESIDUAL_BF16,
    &norm_residual::RMS_NORM_RESIDUAL_BF16,
    &cross_entropy::CROSS_ENTROPY,
    &cross_entropy::CROSS_ENTROPY_BACKWARD,
    &cross_entropy::CROSS_ENTROPY_BF16,
    &cross_entropy::CROSS_ENTROPY_BACKWARD_BF16,
    &cross_entropy_fused::CrossEntropyCountDemo,
    &cross_entropy_fused::CROSS_ENTROPY_FUSED,
    &cross_entropy_fused::CROSS_ENTROPY_FUSED_BF16,
    &cross_entropy_fused::CROSS_ENTROPY_SCALE,
    &cross_entropy_fused::CROSS_ENTROPY_SCALE_BF16,
    &warp_probe::WarpProbeDemo,
    &atomic_probe::AtomicProbeDemo,
    &mma_probe::MmaProbeDemo,
    &bank_probe::BankProbeDemo,
];

/// The family named `name` (its registry name, or the same with `-` for `_`).
pub fn find(name: &str) -> Option<&'static dyn FamilyDemo> {
    let name = name.replace('-', "_");
    FAMILIES.iter().copied().find(|f| f.name() == name)
}

/// A problem size: up to three extents, which the family names (`n`; `m n k`; `blocks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub [usize; 3]);

/// What bounds a family's kernels, and so how their time becomes a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Bytes moved: GB/s, against the device-to-device copy.
    Memory,
    /// Arithmetic: TFLOP/s, against the library that solves the same problem.
    Compute,
    /// A probe of the device layer: checked, not rated.
    Check,
}

/// What one run of a case must do.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// Bytes that must move: each input read once, each output written once.
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
    pub bound: Bound,
}

impl Work {
    /// The rate a run of `ms` achieves, and its unit; `None` for probes.
    pub fn rate(&self, ms: f64) -> Option<(f64, &'static str)> {
        match self.bound {
            Bound::Memory => Some((self.bytes / (ms * 1e-3) / 1e9, "GB/s")),
            Bound::Compute => Some((self.flops / (ms * 1e-3) / 1e12, "TFLOP/s")),
            Bound::Check => None,
        }
    }
}

/// The host side of one kernel family: how a case of it is set up and checked, which every
/// driver needs, and three things only some drivers read ([`Cli`], [`Sizes`], [`KernelChoice`]).
pub trait FamilyDemo: Sync {
    /// The registry's family: its name and its kernels.
    fn family(&self) -> &'static dyn AnyFamily;

    /// The names of the size's extents, as CLI flags and labels (`--n`; `--m --n --k`).
    fn extents(&self) -> &'static [&'static str];

    /// The library that solves the same problem, timed beside the kernels as their ceiling (on a
    /// GPU): its name as reports show it.
    fn baseline(&self) -> Option<&'static str> {
        None
    }

    /// Whether `size` is one every kernel of the family can run, and how much memory a case of it
    /// takes (host bytes, device bytes per input set): checked before anything is allocated.
    fn plan(&self, size: Size) -> Result<Plan>;

    /// A case of `size` on `backend`: random inputs from `rng` (`sets` copies, so that timed runs
    /// can rotate past the L2), poisoned outputs, and what the check compares with.
    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>>;

    /// What `host <family>` shows and runs by default.
    fn cli(&self) -> Cli;

    /// The sizes the test suites, the benches and the sanitizer sweep run.
    fn sizes(&self) -> Sizes;

    /// How the host picks among the family's kernels (`auto`, tile configurations); by default
    /// it has no choice to make.
    fn choice(&self) -> &dyn KernelChoice {
        &NoChoice
    }

    /// The registry name, e.g. "matmul".
    fn name(&self) -> &'static str {
        self.family().name()
    }

    /// The family's kernels, in ladder order.
    fn kernels(&self) -> Vec<KernelInfo> {
        self.family().kernel_infos()
    }

    /// The size written the way reports show it.
    fn label(&self, size: Size) -> String {
        let extents = self.extents();
        if extents.len() == 1 {
            return format!("{}={}", extents[0], size.0[0]);
        }
        size.0[..extents.len()]
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("x")
    }

    /// Checks `size` for `sets` input sets on `backend` before any work: the problem's own limits,
    /// every kernel's launch shape, and the memory the case needs against what is free.
    fn check(&self, backend: &Backend, size: Size, sets: usize) -> Result<Plan> {
        let plan = self.plan(size)?;
        let what = format!("{} at {}", self.name(), self.label(size));
        let device = plan.device_bytes.saturating_mul(sets as u64);
        match backend {
            Backend::Gpu(gpu) => {
                fits(&what, "GPU memory", device, gpu.info().memory_free as u64)?;
                fits(&what, "host memory", plan.host_bytes, available_host_memory())?;
            }
            Backend::Emu => fits(
                &what,
                "host memory",
                plan.host_bytes.saturating_add(device),
                available_host_memory(),
            )?,
        }
        Ok(plan)
    }
}

/// What the CLI needs of a family besides its case.
pub struct Cli {
    /// One line for `host --help`.
    pub about: &'static str,
    /// The size `host <family>` and `host all` run at.
    pub default: Size,
    /// The largest size the emulator runs in a demo: each extent at most this.
    pub emulator_cap: Size,
}

/// The sizes each suite runs a family at.
pub struct Sizes {
    /// Sizes both test suites run every kernel at: ones, warp and tile edges, primes, rectangles.
    pub edge: Vec<Size>,
    /// Sizes the GPU suite adds: large enough to fill the chip.
    pub large: Vec<Size>,
    /// Sizes the benches run, each several times the L2 where the problem allows.
    pub bench: Vec<Size>,
    /// A small size for one checked launch of each kernel under compute-sanitizer.
    pub smoke: Size,
}

/// How the host picks one of a family's kernels: the rung `auto` runs ([`auto`]) and the tile
/// configurations the device chooses among ([`choice`]).
pub trait KernelChoice: Sync {
    /// The kernel `auto` runs at `size` where the sm_90a PTX (wgmma, TMA) runs or not: the fastest
    /// rung for the shape by the runner's figures, and which run said so ([`auto`]). A family with
    /// tile configurations names one only where none of its configurations suits the shape.
    /// `None`: the device chooses among the configurations, or the family has no default.
    fn fastest_rung(&self, _target: auto::Target, _size: Size) -> Option<auto::Rung> {
        None
    }

    /// Kernels (entry names, smallest tile first, then any that split the reduction across the
    /// grid) that are one algorithm at several tile sizes, among which the host chooses for the
    /// device ([`choice`]).
    fn configurations(&self) -> &'static [&'static str] {
        &[]
    }

    /// The configurations that are distinct tiles at `size`, smallest first: those the choice is
    /// made among. All of them unless a family says otherwise.
    fn configurations_at(&self, _size: Size) -> Vec<&'static str> {
        self.configurations().to_vec()
    }

    /// The configuration a family's own model of its kernels predicts fastest at `size` on `gpu`,
    /// where it has one (the persistent grids, which the occupancy rule cannot tell apart: one
    /// block per SM, whatever the tile); `None`: the occupancy rule decides ([`choice::rule`]).
    fn predicted(&self, _gpu: &Gpu, _size: Size) -> Option<choice::Choice> {
        None
    }

    /// Blocks kernel `kernel`'s grid has for `size` (for the choice of a configuration).
    fn launch_blocks(&self, _size: Size, _kernel: usize) -> Result<u64> {
        Ok(1)
    }

    /// Kernel `kernel`'s grid for `size` on `gpu`, as the choice of a configuration sees it: by
    /// default [`KernelChoice::launch_blocks`], each block computing whole outputs. A family whose
    /// grid depends on the device (matmul's split-k splits k to fill it) says so here.
    fn grid_on(&self, _gpu: &Gpu, size: Size, kernel: usize) -> Result<choice::Grid> {
        Ok(choice::Grid::whole(self.launch_blocks(size, kernel)?))
    }
}

/// A family with no kernel to choose: `auto` has no answer and there are no configurations.
pub struct NoChoice;

impl KernelChoice for NoChoice {}

/// What a size needs, known before anything is allocated.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub work: Work,
    /// The plot's x value: elements, or the matrix side.
    pub x: f64,
    /// Host memory for inputs, the reference and the read-back output.
    pub host_bytes: u64,
    /// Device memory for one input set and its output.
    pub device_bytes: u64,
}

/// One prepared problem on one backend: inputs, outputs and the reference, ready to launch any
/// kernel of the family.
pub trait Case {
    /// Launches registered kernel `kernel` (its index in the family) compiled from `source`, on
    /// input set `set`, writing that set's output.
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()>;

    /// The family's baseline library, where this case can run it (the GPU has it).
    fn baseline(&self) -> Option<&'static str> {
        None
    }

    /// Runs the baseline on input set `set`, writing that set's output.
    fn launch_baseline(&mut self, _set: usize) -> Result<()> {
        Err(Error::InvalidInput {
            what: "baseline".into(),
            reason: "this family has no library baseline".into(),
        })
    }

    /// Fills every output with NaN, so that an element no kernel writes fails the check.
    fn poison(&mut self) -> Result<()>;

    /// Checks output set `set` against the f64 reference, and the guard past its end: a summary,
    /// or what was wrong.
    fn check(&self, set: usize) -> std::result::Result<String, String>;
}

/// Blocks of `threads` threads a grid-stride kernel launches at most on `backend`: as many as fit
/// on the GPU at once by threads (SMs × the blocks an SM holds), or a few on the emulator.
pub fn resident_blocks(backend: &Backend, threads: u32) -> u32 {
    match backend {
        Backend::Gpu(gpu) => gpu.info().sm_count * (gpu.info().max_threads_per_sm / threads).max(1),
        Backend::Emu => EMULATOR_BLOCKS,
    }
}

/// Blocks the emulator's grid-stride and persistent kernels launch: enough for several to run
/// at once and for each to take several tiles.
const EMULATOR_BLOCKS: u32 = 8;

/// Blocks of `kernel` the GPU holds at once (SMs × the driver's resident blocks per SM for its
/// registers, shared memory and threads): the grid of a persistent kernel. A few on the emulator.
pub fn resident_blocks_of(backend: &Backend, kernel: &KernelInfo) -> Result<u32> {
    Ok(match backend {
        Backend::Gpu(gpu) => resident_blocks_on(gpu, kernel)?,
        Backend::Emu => EMULATOR_BLOCKS,
    })
}

/// Blocks of `kernel` `gpu` holds at once: SMs × the driver's resident blocks per SM.
pub fn resident_blocks_on(gpu: &Gpu, kernel: &KernelInfo) -> Result<u32> {
    Ok(gpu.info().sm_count * gpu.occupancy(kernel)?.resident_blocks_per_sm.max(1))
}

/// `len` ≥ `needed`, or an error naming the array (the runtime's check).
pub use ptxkit_runtime::check_len;

/// Extra poisoned elements past the end of every input and output: a kernel that reads past an
/// input's end gets NaN, one that writes past an output's end is caught by the check.
pub use kernels::testing::GUARD;

/// The index of `kernel` (entry name, or the name without its family's prefix) in `family`.
pub fn kernel_index(family: &dyn FamilyDemo, name: &str) -> Option<usize> {
    let kernels = family.kernels();
    let prefixed = format!("{}_{name}", family.name());
    kernels
        .iter()
        .position(|k| k.entry == name)
        .or_else(|| kernels.iter().position(|k| k.entry == prefixed))
}

fn fits(what: &str, memory: &'static str, needed: u64, available: u64) -> Result<()> {
    if needed > available {
        return Err(Error::TooLarge {
            what: what.to_string(),
            memory,
            needed_mib: needed.div_ceil(1 << 20),
            available_mib: available >> 20,
        });
    }
    Ok(())
}

/// Host memory available to this process: `MemAvailable` from /proc/meminfo, or no limit where it
/// cannot be read.
pub fn available_host_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(u64::MAX, |kib| kib.saturating_mul(1024))
}

/// The random stream for part `part` of a case drawn from stream `rng`: distinct streams for
/// distinct parts, with no overflow for any `rng`.
pub fn substream(rng: u64, part: u64) -> u64 {
    rng.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(part)
}

/// `len` values uniform in [-1, 1) from stream `rng`, then [`GUARD`] NaNs.
pub fn guarded_inputs(rng: u64, len: usize) -> Vec<f32> {
    use rand::SeedableRng;
    let mut values = kernels::testing::random_vec(&mut rand::rngs::StdRng::seed_from_u64(rng), len);
    values.resize(len + GUARD, f32::NAN);
    values
}

/// The guard past `len` elements of a read-back output: untouched (NaN), or where it was written.
pub fn check_guard(out: &[f32], len: usize) -> std::result::Result<(), String> {
    match out[len..].iter().position(|v| !v.is_nan()) {
        None => Ok(()),
        Some(i) => Err(format!("wrote past the end of the output, at index {}", len + i)),
    }
}

/// A case's outputs, one per input set, each with a guard past its end, and the poison that resets
/// them: what every family's case keeps the same way.
pub struct Outputs<T> {
    buffers: Vec<ptxkit_runtime::array::Buffer<T>>,
    poison: Vec<T>,
}

impl<T: ptxkit_runtime::array::Element + cudarc::driver::DeviceRepr + Default> Outputs<T> {
    /// `sets` outputs of `len` elements plus `guard`, all `poison`, on `backend`.
    pub fn new(backend: &Backend, len: usize, guard: usize, poison: T, sets: usize) -> Result<Self> {
        Self::from_template(backend, vec![poison; len + guard], sets)
    }

    /// `sets` outputs that start as `poison` (guard included), and go back to it at each
    /// [`Outputs::poison`]: for kernels whose outputs must start at given values (counters at 0).
    pub fn from_template(backend: &Backend, poison: Vec<T>, sets: usize) -> Result<Self> {
        let buffers = (0..sets.max(1))
            .map(|_| ptxkit_runtime::array::Buffer::upload(backend, &poison))
            .collect::<Result<Vec<_>>>()?;
        Ok(Outputs { buffers, poison })
    }

    /// Output set `set`, for a launch to write.
    pub fn get_mut(&mut self, set: usize) -> &mut ptxkit_runtime::array::Buffer<T> {
        &mut self.buffers[set]
    }

    /// Every output back to poison.
    pub fn poison(&mut self, backend: &Backend) -> Result<()> {
        for buffer in &mut self.buffers {
            buffer.write(backend, &self.poison)?;
        }
        Ok(())
    }

    /// Output set `set`, guard included, read back to the host (as the check's error text).
    pub fn read(&self, backend: &Backend, set: usize) -> std::result::Result<Vec<T>, String> {
        self.buffers[set].read(backend).map_err(|e| e.to_string())
    }
}

/// Whether `kernel` compiled from `source` runs on `backend`: the Rust kernel from the library's
/// module (the emulator runs all but the sm_90a-only ones), its CUDA C twin on a GPU that loaded
/// the twins ([`crate::cuda_c::load_cuda_c`]).
pub fn runs_here(backend: &Backend, kernel: &KernelInfo, source: Source) -> bool {
    backend.has(kernel.krate, kernel.entry, kernel.sm90a_only, source.module())
}
