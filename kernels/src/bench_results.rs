//! The benchmark results file: written by the criterion benches (`benches/`), read by
//! `cargo xtask bench-report`. One home for its shape.

use serde::{Deserialize, Serialize};

/// One run of the benches on one GPU.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRun {
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    pub gpu: String,
    pub compute_capability: String,
    /// The driver's CUDA version, e.g. "13.0".
    pub driver_cuda: String,
    /// The architecture of the Rust PTX the driver loaded.
    pub ptx_arch: String,
    /// Device-to-device copy bandwidth (bytes read + written), GB/s, measured in this run.
    pub copy_gbs: f64,
    pub cases: Vec<BenchCase>,
    /// Families registered at several tile sizes: the one the host chose for the device, against
    /// the fastest measured.
    #[serde(default)]
    pub choices: Vec<ChoiceCase>,
    /// The bank-conflict study (`host bank-conflicts`), when the run included it.
    #[serde(default)]
    pub banks: Vec<BankReading>,
}

/// One access pattern of the bank-conflict study: a warp's 32 lanes reading `width`-byte elements
/// `stride` elements apart, the conflict degree the bank rule predicts beside the one measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BankReading {
    /// Bytes per access: 4, 8 or 16.
    pub width: u32,
    /// Elements between neighbouring lanes.
    pub stride: u32,
    /// Shared-memory wavefronts per request over the conflict-free request's
    /// (`kernels::banks::conflict_degree`).
    pub predicted: f64,
    /// Cycles per request over the stride-1 request's of the same width.
    pub measured: f64,
    /// The probe's cycles per warp request (median over its blocks).
    pub cycles_per_request: f64,
    /// The seeds' name for this access, where they name it ("s_data[threadIdx.x * 2]").
    pub example: Option<String>,
}

impl BankReading {
    /// How far a measured degree may be from the predicted one and still match: the probe's loop
    /// and clock reads add a little to every request.
    pub const TOLERANCE: f64 = 0.15;

    /// Whether the hardware did what the bank rule predicts.
    pub fn matches(&self) -> bool {
        (self.measured - self.predicted).abs() <= Self::TOLERANCE * self.predicted
    }
}

/// The tile configuration chosen for the device at one size, and how it measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChoiceCase {
    pub family: String,
    pub size: String,
    pub chosen: String,
    /// The chooser's reasoning.
    pub why: String,
    pub chosen_rate: f64,
    pub fastest: String,
    pub fastest_rate: f64,
}

/// What bounds a case, and so which rate and ceiling it is reported against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Arithmetic: TFLOP/s against the library that solves the same problem (cuBLAS for matmul).
    Compute,
    /// Bytes moved on the GPU: GB/s against the device-to-device copy.
    Memory,
    /// Data movement between host and GPU: end-to-end and kernel time.
    Transfer,
}

/// Which compilation of a registered kernel a case measured; absent for library baselines and
/// managed-memory scenarios.
pub use crate::Source;

/// One measured case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchCase {
    /// The registry's family ("matmul", "vec_add"), or "managed" for the scenarios.
    pub family: String,
    pub bound: Bound,
    /// The kernel's entry name (the same for its Rust and CUDA C versions), the library call, or
    /// the scenario.
    pub kernel: String,
    /// The compilation of a registered kernel; `None` for a library baseline or a scenario.
    pub source: Option<Source>,
    /// Human-readable size: "n=1048576", "4096x4096x4096".
    pub size: String,
    /// What the plots put on the x axis: elements, or the matrix side (m for rectangular shapes).
    pub x: f64,
    /// Bytes the case must move (each input read once, each output written once).
    pub bytes: f64,
    /// Floating-point operations the case must do.
    pub flops: f64,
    /// Median time of one iteration over all criterion samples, ms.
    pub median_ms: f64,
    /// GB/s for memory-bound and transfer cases, TFLOP/s for compute-bound ones.
    pub rate: f64,
    /// The rate over the case's ceiling in this run, in %.
    pub percent_of_ceiling: Option<f64>,
    /// Transfer cases: the kernel alone, ms (median); `median_ms` is then end to end.
    pub kernel_ms: Option<f64>,
    /// Input sets the case rotated through so that each iteration misses the L2.
    pub input_sets: usize,
}

impl BenchRun {
    /// Rust / CUDA C rate for every kernel and size measured both ways.
    pub fn rust_over_cuda_c(&self) -> Vec<(&BenchCase, f64)> {
        // The first CUDA C case of each kernel and size, found once: linear in the cases.
        let mut twins = std::collections::HashMap::new();
        for case in self.cases.iter().filter(|c| c.source == Some(Source::CudaC)) {
            twins.entry((case.kernel.as_str(), case.size.as_str())).or_insert(case);
        }
        self.cases
            .iter()
            .filter(|c| c.source == Some(Source::Rust))
            .filter_map(|rust| {
                let cuda = twins.get(&(rust.kernel.as_str(), rust.size.as_str()))?;
                Some((rust, rust.rate / cuda.rate))
            })
            .collect()
    }
}

/// The model-shape suite through the operators against PyTorch (`host/python/bench_models.py
/// --json`, run by `run.sh OUT torch` as OUT/torch-models.json).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelsRun {
    pub device: String,
    /// PyTorch's version.
    pub torch: String,
    /// Per dtype (f32, tf32, bf16): the suite's summary.
    pub summary: std::collections::BTreeMap<String, ModelsSummary>,
    pub products: Vec<ModelProduct>,
}

/// One dtype over the suite.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelsSummary {
    pub shapes: usize,
    /// Geometric mean of PyTorch's time over ours.
    pub geomean_speed: f64,
    pub worst_speed: f64,
    /// m, n, k of the worst product.
    pub worst_shape: [u64; 3],
    pub below_0_85: usize,
}

/// One product of the suite in one dtype.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelProduct {
    pub dtype: String,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// The model layers using it ("Llama-3-8B qkv ×128").
    pub uses: Vec<String>,
    pub rust_us: f64,
    pub pytorch_us: f64,
    /// PyTorch's time over ours: above 1, the Rust kernel is faster.
    pub speed: f64,
    pub rust_tflops: f64,
    pub pytorch_tflops: f64,
    /// Largest error against the f64 product, relative to Σ|a·b|.
    pub error: f64,
    pub checked: bool,
}

/// The PyTorch extension's benchmark (`host/python/bench_torch.py --json`, run by `run.sh OUT
/// torch` as OUT/torch-ops.json): each operator against PyTorch's built-in, and the per-call cost.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TorchRun {
    pub device: String,
    /// PyTorch's version.
    pub torch: String,
    pub ops: Vec<TorchOp>,
    /// Microseconds per call on a tiny tensor, by way of calling.
    pub per_call_us: std::collections::BTreeMap<String, f64>,
}

/// One operator at one shape, from Python.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TorchOp {
    pub op: String,
    pub shape: String,
    pub rust_us: f64,
    pub pytorch_us: f64,
    /// PyTorch's time over ours: above 1, the Rust kernel is faster.
    pub speedup: f64,
    /// "GB/s" or "TFLOP/s".
    pub unit: String,
    pub rust_rate: f64,
    pub pytorch_rate: f64,
}

/// The size sweep against PyTorch (`host/python/bench_sizes.py --json`, run by `run.sh OUT torch`
/// as OUT/torch-sizes.json): the reductions, scans and row operators from 2^10 to 2^30 elements
/// and over row widths from 1 to 256k.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SizesRun {
    pub device: String,
    /// PyTorch's version.
    pub torch: String,
    /// Per operator, over the domain (from 2^16 elements, widths from 32 columns).
    pub summary: std::collections::BTreeMap<String, SizesSummary>,
    pub size_points: Vec<SizePoint>,
}

/// One operator over the sweep's domain.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SizesSummary {
    pub points: usize,
    /// Geometric mean of PyTorch's time over ours.
    pub geomean_speed: f64,
    pub worst_speed: f64,
    /// Rows and columns of the worst point.
    pub worst_shape: [u64; 2],
    pub below_1: usize,
}

/// One operator at one size: `rows` 1 for the whole-array operators (`sum`, `cumsum`), whose n
/// is `cols`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SizePoint {
    pub op: String,
    pub rows: u64,
    pub cols: u64,
    pub rust_us: f64,
    pub pytorch_us: f64,
    /// PyTorch's time over ours: above 1, the Rust kernel is faster.
    pub speed: f64,
    /// Whether ours was within its bound of PyTorch's result.
    pub checked: bool,
}
