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

/// What cuBLAS computes in: the operands' type, the multiplier's precision and C's type; f32 sums
/// throughout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 operands on the FP32 pipes (SGEMM's default: no TF32).
    F32,
    /// f32 operands rounded to TF32 for the tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    Tf32,
    /// bf16 operands on the tensor cores.
    Bf16,
    /// bf16 operands on the tensor cores, C rounded to bf16 (PyTorch's bf16 `a @ b`).
    Bf16Rounded,
}

impl Precision {
    /// The name reports show the baseline under.
    pub fn baseline_name(self) -> &'static str {
        match self {
            Precision::F32 => "cublas_sgemm",
            Precision::Tf32 => "cublas_tf32",
            Precision::Bf16 => "cublas_bf16",
            Precision::Bf16Rounded => "cublas_bf16_rounded",
        }
    }

    /// Bytes of one operand element.
    fn operand_bytes(self) -> usize {
        match self {
            Precision::F32 | Precision::Tf32 => 4,
            Precision::Bf16 | Precision::Bf16Rounded => 2,
        }
    }

    /// Bytes of one element of C.
    fn output_bytes(self) -> usize {
        if self == Precision::Bf16Rounded { 2 } else { 4 }
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

    /// `C = A·B` with row-major A (m×k), B (k×n) and C (m×n) on `backend`'s GPU, A, B and C of
    /// `precision`'s types (`u16` holds bf16 bits). cuBLAS is column-major, so this computes
    /// `Cᵀ = Bᵀ·Aᵀ`, which has the same memory layout.
    pub fn gemm<T: ptxkit_runtime::array::Element, C: ptxkit_runtime::array::Element>(
        &self,
        backend: &Backend,
        precision: Precision,
        (m, n, k): (u32, u32, u32),
        a: &impl Array<T>,
        b: &impl Array<T>,
        c: &mut impl Array<C>,
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
        if size_of::<C>() != precision.output_bytes() {
            return Err(invalid(format!(
                "{precision:?} writes C in {} bytes an element, the array's elements are {}",
                precision.output_bytes(),
                size_of::<C>()
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
            Precision::Bf16 | Precision::Bf16Rounded => (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
        };
        let output_type = if precision == Precision::Bf16Rounded {
            CUDA_R_16BF
        } else {
            CUDA_R_32F
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
                output_type,
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
