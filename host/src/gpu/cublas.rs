//! cuBLAS SGEMM on row-major matrices: the ceiling the matmul kernels are measured against.

use super::{Gpu, GpuArray};
use crate::error::{HostError, Result};
use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;

pub struct Cublas {
    blas: CudaBlas,
}

impl Cublas {
    /// A cuBLAS handle on the GPU's stream, in its default math mode (plain FP32, no TF32).
    pub fn new(gpu: &Gpu) -> Result<Cublas> {
        // SAFETY: only tries to load the library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(HostError::Cublas {
                doing: "loading libcublas".into(),
                message: "libcublas.so.13 not found: put the CUDA 13 libraries on LD_LIBRARY_PATH (e.g. /usr/local/cuda/lib64)".into(),
            });
        }
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| HostError::Cublas {
            doing: "creating a handle".into(),
            message: e.to_string(),
        })?;
        Ok(Cublas { blas })
    }

    /// `C = A·B` with row-major A (m×k), B (k×n), C (m×n). cuBLAS is column-major, so this computes
    /// `Cᵀ = Bᵀ·Aᵀ`, which has the same memory layout.
    #[allow(clippy::too_many_arguments)]
    pub fn sgemm(
        &self,
        gpu: &Gpu,
        a: &impl GpuArray<f32>,
        b: &impl GpuArray<f32>,
        c: &mut impl GpuArray<f32>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        let (m, n, k) =
            crate::validate::matmul("cublas_sgemm", (m, n, k), (a.len(), b.len(), c.len())).and_then(|(m, n, k)| {
                let fits = |x: u32| i32::try_from(x).is_ok();
                if fits(m) && fits(n) && fits(k) {
                    Ok((m as i32, n as i32, k as i32))
                } else {
                    Err(HostError::InvalidInput {
                        kernel: "cublas_sgemm",
                        reason: "dimensions beyond i32".into(),
                    })
                }
            })?;
        let stream = gpu.stream();
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the sizes were checked above; the handle works on the GPU's stream.
        unsafe {
            cudarc::cublas::result::sgemm(
                *self.blas.handle(),
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                b.address(stream) as *const f32,
                n,
                a.address(stream) as *const f32,
                k,
                &beta,
                c.address(stream) as *mut f32,
                n,
            )
        }
        .map_err(|e| HostError::Cublas {
            doing: "running SGEMM".into(),
            message: e.to_string(),
        })?;
        a.launched(stream)?;
        b.launched(stream)?;
        c.launched(stream)
    }
}
