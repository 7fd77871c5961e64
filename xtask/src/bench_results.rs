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
}

/// Which group a case belongs to, and so which ceiling bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Arithmetic-bound: TFLOP/s against cuBLAS SGEMM on the same shape.
    Matmul,
    /// Memory-bound: GB/s against the copy bandwidth.
    Elementwise,
    /// Data movement between host and GPU: end-to-end and kernel time.
    Managed,
}

/// Who compiled the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Rust,
    CudaC,
    /// cuBLAS, the copy engines.
    Library,
}

/// One measured case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchCase {
    pub family: Family,
    /// The kernel's entry name (the same for its Rust and CUDA C versions), or the library call.
    pub kernel: String,
    pub source: Source,
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
    /// GB/s for elementwise and managed cases, TFLOP/s for matmul.
    pub rate: f64,
    /// The rate over the family's ceiling in this run, in %.
    pub percent_of_ceiling: Option<f64>,
    /// Managed cases: the kernel alone, ms (median); `median_ms` is then end to end.
    pub kernel_ms: Option<f64>,
    /// Input sets the case rotated through so that each iteration misses the L2.
    pub input_sets: usize,
}

impl BenchRun {
    /// Rust / CUDA C rate for every kernel and size measured both ways.
    pub fn rust_over_cuda_c(&self) -> Vec<(&BenchCase, f64)> {
        self.cases
            .iter()
            .filter(|c| c.source == Source::Rust)
            .filter_map(|rust| {
                let cuda = self
                    .cases
                    .iter()
                    .find(|c| c.source == Source::CudaC && c.kernel == rust.kernel && c.size == rust.size)?;
                Some((rust, rust.rate / cuda.rate))
            })
            .collect()
    }
}
