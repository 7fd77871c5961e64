//! Typed launches, one per kernel: validate the inputs, take grid, block and shared bytes from the
//! kernel's own constants in `kernels`, launch on the GPU's stream.

use super::{CudaReference, Gpu, GpuArray};
use crate::error::{Doing, HostError, Result};
use crate::validate;
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use kernels::{KernelInfo, LaunchShape};

/// Dynamic shared memory a block gets without opting in.
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// The three matmul kernels, one idea apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatmulVariant {
    Naive,
    Tiled,
    Padded,
}

impl MatmulVariant {
    pub const ALL: [MatmulVariant; 3] = [MatmulVariant::Naive, MatmulVariant::Tiled, MatmulVariant::Padded];

    pub fn info(self) -> &'static KernelInfo {
        match self {
            MatmulVariant::Naive => &kernels::matmul::naive::INFO,
            MatmulVariant::Tiled => &kernels::matmul::tiled::INFO,
            MatmulVariant::Padded => &kernels::matmul::padded::INFO,
        }
    }

    pub fn launch_shape(self, m: u32, n: u32) -> LaunchShape {
        match self {
            MatmulVariant::Naive => kernels::matmul::naive::launch_shape(m, n),
            MatmulVariant::Tiled => kernels::matmul::tiled::launch_shape(m, n),
            MatmulVariant::Padded => kernels::matmul::padded::launch_shape(m, n),
        }
    }

    /// Rows of C one block covers.
    pub fn block_rows(self) -> u32 {
        self.info().block.y
    }
}

/// Which compilation of a kernel to launch: the Rust kernel, or its CUDA C reference.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Rust,
    CudaC(&'a CudaReference),
}

impl<'a> Source<'a> {
    /// The sources to measure `entry` from: Rust, and CUDA C where `cuda_c` has a reference for it.
    pub fn for_kernel(entry: &str, cuda_c: Option<&'a CudaReference>) -> Vec<Source<'a>> {
        let mut sources = vec![Source::Rust];
        if let Some(reference) = cuda_c.filter(|r| r.has(entry)) {
            sources.push(Source::CudaC(reference));
        }
        sources
    }

    /// "rust" or "cuda_c", as reports name them.
    pub fn label(self) -> &'static str {
        match self {
            Source::Rust => "rust",
            Source::CudaC(_) => "cuda_c",
        }
    }
}

impl Gpu {
    /// The kernel's function, with its dynamic shared-memory limit raised where it needs more than 48 KB.
    fn prepare<'a>(&'a self, source: Source<'a>, kernel: &KernelInfo, shape: &LaunchShape) -> Result<&'a CudaFunction> {
        let function = match source {
            Source::Rust => self.function(kernel.entry),
            Source::CudaC(reference) => reference.function(kernel.entry)?,
        };
        let limit = self.info().shared_per_block_optin;
        if shape.shared_bytes > limit {
            return Err(HostError::SharedMemoryTooLarge {
                kernel: kernel.entry,
                needed: shape.shared_bytes,
                limit,
            });
        }
        if shape.shared_bytes > DEFAULT_SHARED_LIMIT {
            function
                .set_attribute(
                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shape.shared_bytes as i32,
                )
                .doing(|| {
                    format!(
                        "raising {}'s shared-memory limit to {} bytes",
                        kernel.entry, shape.shared_bytes
                    )
                })?;
        }
        Ok(function)
    }
}

fn config(shape: &LaunchShape) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (shape.grid.x, shape.grid.y, shape.grid.z),
        block_dim: (shape.block.x, shape.block.y, shape.block.z),
        shared_mem_bytes: shape.shared_bytes,
    }
}

/// The element-wise kernels: the same arguments `(a, b, out, n)`, one thread per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elementwise {
    /// `out[i] = a[i] + b[i]`.
    VecAdd,
    /// The seed's shared-memory example (see `kernels::shared_mem_add`).
    SharedMemAdd,
}

impl Elementwise {
    pub const ALL: [Elementwise; 2] = [Elementwise::VecAdd, Elementwise::SharedMemAdd];

    pub fn info(self) -> &'static KernelInfo {
        match self {
            Elementwise::VecAdd => &kernels::vec_add::INFO,
            Elementwise::SharedMemAdd => &kernels::shared_mem_add::INFO,
        }
    }

    pub fn launch_shape(self, n: u32) -> LaunchShape {
        match self {
            Elementwise::VecAdd => kernels::vec_add::launch_shape(n),
            Elementwise::SharedMemAdd => kernels::shared_mem_add::launch_shape(n),
        }
    }
}

/// `out[i] = a[i] + b[i]` for `i < n`.
pub fn vec_add(
    gpu: &Gpu,
    a: &impl GpuArray<f32>,
    b: &impl GpuArray<f32>,
    out: &mut impl GpuArray<f32>,
    n: usize,
) -> Result<()> {
    elementwise_from(gpu, Source::Rust, Elementwise::VecAdd, a, b, out, n)
}

/// The seed's shared-memory example (see `kernels::shared_mem_add`).
pub fn shared_mem_add(
    gpu: &Gpu,
    a: &impl GpuArray<f32>,
    b: &impl GpuArray<f32>,
    out: &mut impl GpuArray<f32>,
    n: usize,
) -> Result<()> {
    elementwise_from(gpu, Source::Rust, Elementwise::SharedMemAdd, a, b, out, n)
}

/// An element-wise kernel from either source.
pub fn elementwise_from(
    gpu: &Gpu,
    source: Source,
    kernel: Elementwise,
    a: &impl GpuArray<f32>,
    b: &impl GpuArray<f32>,
    out: &mut impl GpuArray<f32>,
    n: usize,
) -> Result<()> {
    let info = kernel.info();
    let n = validate::elementwise(info.entry, n, &[a.len(), b.len()], out.len())?;
    let shape = kernel.launch_shape(n);
    let function = gpu.prepare(source, info, &shape)?;
    let stream = gpu.stream();
    let (a_address, b_address, out_address) = (a.address(stream), b.address(stream), out.address(stream));
    let mut launch = stream.launch_builder(function);
    launch.arg(&a_address).arg(&b_address).arg(&out_address).arg(&n);
    // SAFETY: the kernel reads n elements of a and b and writes n of out, all checked above.
    unsafe { launch.launch(config(&shape)) }.doing(|| format!("launching {}", info.entry))?;
    a.launched(stream)?;
    b.launched(stream)?;
    out.launched(stream)
}

/// `C = A·B`, row-major, A m×k, B k×n, C m×n.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    gpu: &Gpu,
    variant: MatmulVariant,
    a: &impl GpuArray<f32>,
    b: &impl GpuArray<f32>,
    c: &mut impl GpuArray<f32>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<()> {
    matmul_from(gpu, Source::Rust, variant, a, b, c, m, n, k)
}

/// [`matmul`] from either source.
#[allow(clippy::too_many_arguments)]
pub fn matmul_from(
    gpu: &Gpu,
    source: Source,
    variant: MatmulVariant,
    a: &impl GpuArray<f32>,
    b: &impl GpuArray<f32>,
    c: &mut impl GpuArray<f32>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<()> {
    let kernel = variant.info();
    let (m, n, k) = validate::matmul(kernel.entry, (m, n, k), (a.len(), b.len(), c.len()))?;
    validate::grid_rows(kernel.entry, m, variant.block_rows())?;
    let shape = variant.launch_shape(m, n);
    let function = gpu.prepare(source, kernel, &shape)?;
    let stream = gpu.stream();
    let (a_address, b_address, c_address) = (a.address(stream), b.address(stream), c.address(stream));
    let mut launch = stream.launch_builder(function);
    launch
        .arg(&a_address)
        .arg(&b_address)
        .arg(&c_address)
        .arg(&m)
        .arg(&n)
        .arg(&k);
    // SAFETY: A, B and C hold m·k, k·n and m·n elements, checked above.
    unsafe { launch.launch(config(&shape)) }.doing(|| format!("launching {}", kernel.entry))?;
    a.launched(stream)?;
    b.launched(stream)?;
    c.launched(stream)
}

/// `kernels::probe::warp_probe` over `blocks` blocks; `out` holds WARP_PROBE_WORDS per thread.
pub fn warp_probe(gpu: &Gpu, out: &mut impl GpuArray<u32>, blocks: u32) -> Result<()> {
    use kernels::probe::{WARP_PROBE_BLOCK, WARP_PROBE_INFO, WARP_PROBE_WORDS, warp_probe_launch};
    let kernel = &WARP_PROBE_INFO;
    let needed = blocks as usize * (WARP_PROBE_BLOCK * WARP_PROBE_WORDS) as usize;
    if blocks == 0 || out.len() < needed {
        return Err(HostError::InvalidInput {
            kernel: kernel.entry,
            reason: format!(
                "{blocks} blocks need {needed} output words (at least one block); got {}",
                out.len()
            ),
        });
    }
    let shape = warp_probe_launch(blocks);
    let function = gpu.prepare(Source::Rust, kernel, &shape)?;
    let stream = gpu.stream();
    let out_address = out.address(stream);
    let mut launch = stream.launch_builder(function);
    launch.arg(&out_address);
    // SAFETY: out holds WARP_PROBE_WORDS words per launched thread, checked above.
    unsafe { launch.launch(config(&shape)) }.doing(|| format!("launching {}", kernel.entry))?;
    out.launched(stream)
}
