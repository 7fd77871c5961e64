//! The kernel library's host side: for each family of `kernels`, its checked launch (the
//! problem's argument checks), random inputs, the check against the f64 reference and the sizes
//! it runs at ([`families`]); the choice of a kernel for the device ([`families::auto`]); the
//! library's own PTX ([`ptx`]); and the libraries it is measured against: cuBLAS ([`cublas`]), CUB
//! ([`cub`]) and nvcc's build of each kernel's CUDA C twin ([`cuda_c`]).
//!
//! It uses the toolkit as any user does: `ptxkit-build` in its build script, `ptxkit-runtime` to
//! load the PTX and launch.
//!
//! ```no_run
//! # fn main() -> ptxkit_runtime::Result<()> {
//! # let (m, n, k) = (64, 48, 32);
//! # let (a_host, b_host) = (vec![1.0f32; m * k], vec![1.0f32; k * n]);
//! use kernels::matmul::{Matmul, tiled};
//! use kernels::Source;
//! use kernels_host::families::matmul;
//! use kernels_host::ptx::Kernels;
//! use ptxkit_runtime::{Backend, Gpu};
//!
//! let mut gpu = Gpu::open(None)?; // device 0, or the one $PTXKIT_DEVICE names
//! gpu.load::<Kernels>()?;
//! let (a, b) = (gpu.upload(&a_host)?, gpu.upload(&b_host)?);
//! let mut c = gpu.upload(&vec![f32::NAN; m * n])?;
//! let backend = Backend::Gpu(Box::new(gpu)); // or Backend::Emu, with Vec<f32> arrays
//! let problem = Matmul::new(m, n, k)?; // sizes no kernel can run are refused here
//! matmul::launch(&backend, &tiled::KERNEL, Source::Rust, &problem, &a, &b, &mut c)?;
//! # Ok(())
//! # }
//! ```

pub mod cub;
pub mod cublas;
pub mod cuda_c;
pub mod families;
pub mod ptx;

use ptxkit_runtime::{Backend, BackendChoice, DeviceList, Gpu, Result};

/// The backend `choice` asks for with the library's kernels loaded on it, and the notice to print
/// where `Auto` fell back to the emulator ([`Backend::choose`]).
pub fn open(choice: BackendChoice, device: Option<usize>) -> Result<(Backend, Option<String>)> {
    let (mut backend, notice) = Backend::choose(choice, device)?;
    backend.load::<ptx::Kernels>()?;
    Ok((backend, notice))
}

/// Device `ordinal` (or the one `$PTXKIT_DEVICE` names, or 0) with the library's kernels loaded.
pub fn open_gpu(ordinal: Option<usize>) -> Result<Gpu> {
    let mut gpu = Gpu::open(ordinal)?;
    gpu.load::<ptx::Kernels>()?;
    Ok(gpu)
}

/// The devices `list` names, each with the library's kernels loaded.
pub fn open_gpus(list: &DeviceList) -> Result<Vec<Gpu>> {
    let mut gpus = Gpu::open_list(list)?;
    for gpu in &mut gpus {
        gpu.load::<ptx::Kernels>()?;
    }
    Ok(gpus)
}

/// The architecture of the library's PTX loaded on `gpu` (`sm_90a` on an H200), or "none".
pub fn library_arch(gpu: &Gpu) -> &'static str {
    use ptxkit_runtime::KernelCrate;
    gpu.module_arch(ptx::Kernels::NAME).unwrap_or("none")
}
