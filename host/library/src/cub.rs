//! CUB, NVIDIA's library of block-cooperative primitives, as the baseline the reduction, histogram
//! and scan kernels are measured against. CUB is C++ templates, so it reaches Rust as a
//! small shared library of `extern "C"` wrappers (`benches/reference/cub/anchors.cu`), which the GPU
//! runner's script builds with nvcc and names in `$CUB_ANCHORS`; without it there is no CUB baseline.

use ptxkit_runtime::Backend;
use ptxkit_runtime::Gpu;
use ptxkit_runtime::array::{Array, Buffer, Element};
use ptxkit_runtime::{Error, Result};
use std::ffi::c_void;

/// Environment variable naming the built anchors library.
pub const CUB_ENV: &str = "CUB_ANCHORS";

type TempBytes = unsafe extern "C" fn(n: i64, bytes: *mut usize) -> i32;
/// `(input, output, n, temp, temp_bytes, stream)`, as every wrapper in anchors.cu.
type Call =
    unsafe extern "C" fn(input: u64, output: u64, n: i64, temp: u64, temp_bytes: usize, stream: *mut c_void) -> i32;

/// The anchors library, loaded, with the temporary storage CUB asks for.
pub struct Cub {
    reduce_sum: Call,
    histogram_u8: Call,
    histogram_f32: Call,
    inclusive_sum: Call,
    exclusive_sum: Call,
    reduce_max: Call,
    inclusive_sum_i32: Call,
    exclusive_sum_i32: Call,
    temp: Buffer<u8>,
    _library: libloading::Library,
}

/// The wrappers, each with the function that sizes its temporary storage.
const CALLS: [(&[u8], &[u8]); 8] = [
    (b"cub_reduce_sum\0", b"cub_reduce_sum_temp_bytes\0"),
    (b"cub_histogram_u8\0", b"cub_histogram_u8_temp_bytes\0"),
    (b"cub_histogram_f32\0", b"cub_histogram_f32_temp_bytes\0"),
    (b"cub_inclusive_sum\0", b"cub_inclusive_sum_temp_bytes\0"),
    (b"cub_exclusive_sum\0", b"cub_exclusive_sum_temp_bytes\0"),
    (b"cub_reduce_max\0", b"cub_reduce_max_temp_bytes\0"),
    (b"cub_inclusive_sum_i32\0", b"cub_inclusive_sum_i32_temp_bytes\0"),
    (b"cub_exclusive_sum_i32\0", b"cub_exclusive_sum_i32_temp_bytes\0"),
];

fn failed(doing: &str, message: String) -> Error {
    Error::Library {
        library: "CUB",
        doing: doing.to_string(),
        message,
    }
}

impl Cub {
    /// The library `$CUB_ANCHORS` names, ready for calls on up to `max_n` elements; `None` when
    /// the variable is not set (no baseline), an error when it names something unusable.
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
        let symbol = |name: &[u8]| String::from_utf8_lossy(&name[..name.len() - 1]).into_owned();
        let mut calls = Vec::new();
        let mut bytes = 1usize;
        for (call, sizing) in CALLS {
            // SAFETY: the symbols have these signatures in anchors.cu.
            let (call, sizing) = unsafe {
                let missing =
                    |name: &[u8], e: libloading::Error| failed(&format!("finding {}", symbol(name)), e.to_string());
                (
                    *library.get::<Call>(call).map_err(|e| missing(call, e))?,
                    *library.get::<TempBytes>(sizing).map_err(|e| missing(sizing, e))?,
                )
            };
            let mut needed = 0usize;
            // SAFETY: writes one usize.
            let status = unsafe { sizing(max_n as i64, &mut needed) };
            if status != 0 {
                return Err(failed("sizing its temporary storage", format!("cudaError {status}")));
            }
            bytes = bytes.max(needed);
            calls.push(call);
        }
        let temp = Buffer::Device(gpu.zeros::<u8>(bytes)?);
        Ok(Some(Cub {
            reduce_sum: calls[0],
            histogram_u8: calls[1],
            histogram_f32: calls[2],
            inclusive_sum: calls[3],
            exclusive_sum: calls[4],
            reduce_max: calls[5],
            inclusive_sum_i32: calls[6],
            exclusive_sum_i32: calls[7],
            temp,
            _library: library,
        }))
    }

    /// The library a case loaded, or the error a baseline launch without it gives.
    pub fn loaded(cub: &Option<Cub>) -> Result<&Cub> {
        cub.as_ref().ok_or_else(|| Error::NeedsGpu {
            what: "CUB".into(),
            why: "it is a GPU library, loaded from $CUB_ANCHORS",
        })
    }

    /// `output[0] = Σ input[..n]` with `cub::DeviceReduce::Sum`, on the GPU's stream.
    pub fn reduce_sum(
        &self,
        backend: &Backend,
        input: &impl Array<f32>,
        output: &mut impl Array<f32>,
        n: usize,
    ) -> Result<()> {
        self.run(self.reduce_sum, "summing", backend, (input, output), (n, 1))
    }

    /// `output[0] = max(input[..n])` with `cub::DeviceReduce::Max`, on the GPU's stream.
    pub fn reduce_max(
        &self,
        backend: &Backend,
        input: &impl Array<f32>,
        output: &mut impl Array<f32>,
        n: usize,
    ) -> Result<()> {
        self.run(self.reduce_max, "finding the maximum", backend, (input, output), (n, 1))
    }

    /// `bins[b] += count of b in input[..n]` for the 256 byte values, with
    /// `cub::DeviceHistogram::HistogramEven` (levels 0..=256), on the GPU's stream.
    pub fn histogram_u8(
        &self,
        backend: &Backend,
        input: &impl Array<u8>,
        bins: &mut impl Array<u32>,
        n: usize,
    ) -> Result<()> {
        self.run(self.histogram_u8, "counting", backend, (input, bins), (n, 256))
    }

    /// `bins[b] += count of input[..n] in bin b` of 256 equal bins over
    /// [`crate::families::histogram_f32::RANGE`] (the wrapper's levels), with
    /// `cub::DeviceHistogram::HistogramEven`, on the GPU's stream.
    pub fn histogram_f32(
        &self,
        backend: &Backend,
        input: &impl Array<f32>,
        bins: &mut impl Array<u32>,
        n: usize,
    ) -> Result<()> {
        self.run(self.histogram_f32, "counting", backend, (input, bins), (n, 256))
    }

    /// `output[..n]` = the inclusive (or exclusive) prefix sums of `input[..n]`, with
    /// `cub::DeviceScan::InclusiveSum` (or `ExclusiveSum`), on the GPU's stream.
    pub fn scan(
        &self,
        backend: &Backend,
        input: &impl Array<f32>,
        output: &mut impl Array<f32>,
        n: usize,
        exclusive: bool,
    ) -> Result<()> {
        let call = if exclusive {
            self.exclusive_sum
        } else {
            self.inclusive_sum
        };
        self.run(call, "scanning", backend, (input, output), (n, n))
    }

    /// `output[..n]` = the inclusive (or exclusive) prefix sums of `input[..n]` in i32, wrapping,
    /// with `cub::DeviceScan` on the same bits as u32, on the GPU's stream.
    pub fn scan_i32(
        &self,
        backend: &Backend,
        input: &impl Array<i32>,
        output: &mut impl Array<i32>,
        n: usize,
        exclusive: bool,
    ) -> Result<()> {
        let call = if exclusive {
            self.exclusive_sum_i32
        } else {
            self.inclusive_sum_i32
        };
        self.run(call, "scanning", backend, (input, output), (n, n))
    }

    /// Checks that `input` holds `n` elements and `output` `output_len`, then runs `call` on them.
    fn run<I: Element, O: Element>(
        &self,
        call: Call,
        doing: &str,
        backend: &Backend,
        (input, output): (&impl Array<I>, &mut impl Array<O>),
        (n, output_len): (usize, usize),
    ) -> Result<()> {
        ptxkit_runtime::check_len("input", input.len(), n)?;
        ptxkit_runtime::check_len("output", output.len(), output_len)?;
        self.call(
            call,
            doing,
            backend,
            (input.address(backend)?, output.address_mut(backend)?),
            n,
        )
    }

    /// Runs `call` on `(input, output)` addresses of arrays already checked for `n` elements.
    fn call(&self, call: Call, doing: &str, backend: &Backend, (input, output): (u64, u64), n: usize) -> Result<()> {
        let Backend::Gpu(gpu) = backend else {
            return Err(Error::NeedsGpu {
                what: "CUB".into(),
                why: "it is a GPU library",
            });
        };
        let temp = self.temp.address(backend)?;
        // SAFETY: the callers checked the lengths, the addresses are on this GPU, and the
        // temporary storage was sized by CUB for at least n elements (the case's largest).
        let status = unsafe {
            call(
                input,
                output,
                n as i64,
                temp,
                self.temp.len(),
                gpu.stream().cu_stream() as *mut c_void,
            )
        };
        if status != 0 {
            return Err(failed(doing, format!("cudaError {status}")));
        }
        Ok(())
    }
}
