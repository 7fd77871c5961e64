//! cuBLAS GEMM on row-major matrices with f32 output: the ceilings the matmul kernels are measured
//! against, in the precision each ladder computes in ([`Precision`]).

use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::cublasComputeType_t::{CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
use cudarc::cublas::sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT as CUBLAS_GEMM_DEFAULT;
use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
use cudarc::cublas::sys::cudaDataType_t::{CUDA_R_16BF, CUDA_R_32F};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Gpu;
use ptxkit_runtime::array::Array;
use ptxkit_runtime::{Error, Result};

pub struct Cublas {
    blas: CudaBlas,
}

/// What cuBLAS computes in: the operands' type and the multiplier's precision; f32 sums and output
/// throughout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 operands on the FP32 pipes (SGEMM's default: no TF32).
    F32,
    /// f32 operands rounded to TF32 for the tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    Tf32,
    /// bf16 operands on the tensor cores.
    Bf16,
}

impl Precision {
    /// The name reports show the baseline under.
    pub fn baseline_name(self) -> &'static str {
        match self {
            Precision::F32 => "cublas_sgemm",
            Precision::Tf32 => "cublas_tf32",
            Precision::Bf16 => "cublas_bf16",
        }
    }

    /// Bytes of one operand element.
    fn operand_bytes(self) -> usize {
        if self == Precision::Bf16 { 2 } else { 4 }
    }
}

impl Cublas {
    /// A cuBLAS handle on the GPU's stream.
    pub fn new(gpu: &Gpu) -> Result<Cublas> {
        // SAFETY: only tries to load the library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(Error::Library {
                library: "cuBLAS",
                doing: "loading libcublas".into(),
                message: "libcublas.so.13 not found: put the CUDA 13 libraries on LD_LIBRARY_PATH (e.g. /usr/local/cuda/lib64)".into(),
            });
        }
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| Error::Library {
            library: "cuBLAS",
            doing: "creating a handle".into(),
            message: e.to_string(),
        })?;
        Ok(Cublas { blas })
    }

    /// `C = A·B` with row-major A (m×k), B (k×n) and f32 C (m×n) on `backend`'s GPU, A and B of
    /// `precision`'s operand type (`u16` holds bf16 bits). cuBLAS is column-major, so this computes
    /// `Cᵀ = Bᵀ·Aᵀ`, which has the same memory layout.
    pub fn gemm<T: ptxkit_runtime::array::Element>(
        &self,
        backend: &Backend,
        precision: Precision,
        (m, n, k): (u32, u32, u32),
        a: &impl Array<T>,
        b: &impl Array<T>,
        c: &mut impl Array<f32>,
    ) -> Result<()> {
        let name = precision.baseline_name();
        let invalid = |reason: String| Error::InvalidInput {
            what: name.into(),
            reason,
        };
        if size_of::<T>() != precision.operand_bytes() {
            return Err(invalid(format!(
                "{precision:?} operands are {} bytes each, the arrays' elements {}",
                precision.operand_bytes(),
                size_of::<T>()
            )));
        }
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        ptxkit_runtime::check_len("A", a.len(), mu * ku)?;
        ptxkit_runtime::check_len("B", b.len(), ku * nu)?;
        ptxkit_runtime::check_len("C", c.len(), mu * nu)?;
        let [Ok(m), Ok(n), Ok(k)] = [m, n, k].map(i32::try_from) else {
            return Err(invalid(format!("{m}×{n}×{k} has a dimension beyond cuBLAS's i32")));
        };
        let (operand_type, compute) = match precision {
            Precision::F32 => (CUDA_R_32F, CUBLAS_COMPUTE_32F),
            Precision::Tf32 => (CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
            Precision::Bf16 => (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
        };
        let (a_address, b_address, c_address) = (a.address(backend)?, b.address(backend)?, c.address_mut(backend)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the lengths and element sizes were checked above and the addresses are on this
        // GPU; the handle works on the GPU's stream; alpha and beta are f32, as the compute type
        // wants.
        unsafe {
            cudarc::cublas::result::gemm_ex(
                *self.blas.handle(),
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b_address as *const _,
                operand_type,
                n,
                a_address as *const _,
                operand_type,
                k,
                (&beta as *const f32).cast(),
                c_address as *mut _,
                CUDA_R_32F,
                n,
                compute,
                CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| Error::Library {
            library: "cuBLAS",
            doing: format!("running {name}"),
            message: e.to_string(),
        })?;
        for array in [a as &dyn ptxkit_runtime::array::Tracked, b, &*c] {
            array.launched(backend)?;
        }
        Ok(())
    }
}
