//! cuBLAS SGEMM on row-major matrices: the ceiling the matmul kernels are measured against.

use super::Gpu;
use crate::array::Array;
use crate::backend::Backend;
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

    /// `C = A·B` for `problem` with row-major A (m×k), B (k×n), C (m×n), on `backend`'s GPU.
    /// cuBLAS is column-major, so this computes `Cᵀ = Bᵀ·Aᵀ`, which has the same memory layout.
    pub fn sgemm(
        &self,
        backend: &Backend,
        problem: &kernels::matmul::Matmul,
        a: &impl Array<f32>,
        b: &impl Array<f32>,
        c: &mut impl Array<f32>,
    ) -> Result<()> {
        let invalid = |reason: String| HostError::InvalidInput {
            what: "cublas_sgemm".into(),
            reason,
        };
        let (a_len, b_len, c_len) = problem.lengths();
        crate::families::check_len("A", a.len(), a_len)?;
        crate::families::check_len("B", b.len(), b_len)?;
        crate::families::check_len("C", c.len(), c_len)?;
        let dims = [problem.m, problem.n, problem.k].map(i32::try_from);
        let [Ok(m), Ok(n), Ok(k)] = dims else {
            return Err(invalid(format!("{problem:?} has a dimension beyond cuBLAS's i32")));
        };
        let (a_address, b_address, c_address) = (a.address(backend)?, b.address(backend)?, c.address_mut(backend)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the lengths were checked above and the addresses are on this GPU; the handle
        // works on the GPU's stream.
        unsafe {
            cudarc::cublas::result::sgemm(
                *self.blas.handle(),
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                b_address as *const f32,
                n,
                a_address as *const f32,
                k,
                &beta,
                c_address as *mut f32,
                n,
            )
        }
        .map_err(|e| HostError::Cublas {
            doing: "running SGEMM".into(),
            message: e.to_string(),
        })?;
        for array in [a as &dyn crate::array::Tracked, b, &*c] {
            array.launched(backend)?;
        }
        Ok(())
    }
}
