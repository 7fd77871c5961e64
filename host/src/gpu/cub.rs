//! CUB, NVIDIA's library of block-cooperative primitives, as the ceiling the reduction (and later
//! scan and histogram) kernels are measured against. CUB is C++ templates, so it reaches Rust as a
//! small shared library of `extern "C"` wrappers (`benches/reference/cub/anchors.cu`), which the GPU
//! runner's script builds with nvcc and names in `$CUB_ANCHORS`; without it there is no CUB baseline.

use super::Gpu;
use crate::array::{Array, Buffer};
use crate::backend::Backend;
use crate::error::{HostError, Result};
use std::ffi::c_void;

/// Environment variable naming the built anchors library.
pub const CUB_ENV: &str = "CUB_ANCHORS";

type TempBytes = unsafe extern "C" fn(n: i64, bytes: *mut usize) -> i32;
type ReduceSum =
    unsafe extern "C" fn(input: u64, output: u64, n: i64, temp: u64, temp_bytes: usize, stream: *mut c_void) -> i32;

/// The anchors library, loaded, with the temporary storage CUB asks for.
pub struct Cub {
    reduce_sum: ReduceSum,
    temp: Buffer<u8>,
    _library: libloading::Library,
}

fn failed(doing: &str, message: String) -> HostError {
    HostError::Library {
        library: "CUB",
        doing: doing.to_string(),
        message,
    }
}

impl Cub {
    /// The library `$CUB_ANCHORS` names, ready for sums of up to `max_n` elements; `None` when the
    /// variable is not set (no baseline), an error when it names something unusable.
    pub fn load(gpu: &Gpu, max_n: usize) -> Result<Option<Cub>> {
        let Some(path) = std::env::var_os(CUB_ENV) else {
            return Ok(None);
        };
        // SAFETY: the library is ours (built from benches/reference/cub/anchors.cu); loading it
        // runs no initialisers beyond the CUDA runtime's.
        let library = unsafe { libloading::Library::new(&path) }.map_err(|e| {
            failed(
                "loading the anchors library",
                format!("{}: {e}", path.to_string_lossy()),
            )
        })?;
        // SAFETY: the symbols have these signatures in anchors.cu.
        let (temp_bytes, reduce_sum) = unsafe {
            let temp_bytes = *library
                .get::<TempBytes>(b"cub_reduce_sum_temp_bytes\0")
                .map_err(|e| failed("finding cub_reduce_sum_temp_bytes", e.to_string()))?;
            let reduce_sum = *library
                .get::<ReduceSum>(b"cub_reduce_sum\0")
                .map_err(|e| failed("finding cub_reduce_sum", e.to_string()))?;
            (temp_bytes, reduce_sum)
        };
        let mut bytes = 0usize;
        // SAFETY: writes one usize.
        let status = unsafe { temp_bytes(max_n as i64, &mut bytes) };
        if status != 0 {
            return Err(failed("sizing its temporary storage", format!("cudaError {status}")));
        }
        let temp = Buffer::Device(gpu.zeros::<u8>(bytes.max(1))?);
        Ok(Some(Cub {
            reduce_sum,
            temp,
            _library: library,
        }))
    }

    /// `output[0] = Σ input[..n]` with `cub::DeviceReduce::Sum`, on the GPU's stream.
    pub fn reduce_sum(
        &self,
        backend: &Backend,
        input: &impl Array<f32>,
        output: &mut impl Array<f32>,
        n: usize,
    ) -> Result<()> {
        crate::families::check_len("input", input.len(), n)?;
        crate::families::check_len("output", output.len(), 1)?;
        let Backend::Gpu(gpu) = backend else {
            return Err(HostError::NeedsGpu {
                what: "CUB".into(),
                why: "it is a GPU library",
            });
        };
        let (input, output) = (input.address(backend)?, output.address_mut(backend)?);
        let temp = self.temp.address(backend)?;
        // SAFETY: the lengths were checked above, the addresses are on this GPU, and the
        // temporary storage was sized by CUB for at least n elements (the case's largest).
        let status = unsafe {
            (self.reduce_sum)(
                input,
                output,
                n as i64,
                temp,
                self.temp.len(),
                gpu.stream().cu_stream() as *mut c_void,
            )
        };
        if status != 0 {
            return Err(failed("summing", format!("cudaError {status}")));
        }
        Ok(())
    }
}
