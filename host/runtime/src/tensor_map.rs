//! Tensor maps for TMA copies: the host encodes one per matrix (`cuTensorMapEncodeTiled`) and the
//! kernels read them from global memory. Each GPU keeps the maps it has uploaded, keyed by their
//! own bytes (which encode the address, sizes, strides and box), so a launch on arrays it has seen
//! costs one host-side encode and no copy.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::CudaSlice;
use cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use std::collections::HashMap;
use std::sync::Mutex;

/// One map: 128 bytes.
pub type TensorMap = [u64; 16];

/// Sets of maps kept per GPU before the cache is emptied: a few hundred bytes of GPU memory
/// each, and more than a large model's products name (each layer's weights beside the
/// activations the framework's allocator hands out again every step).
const KEPT: usize = 4096;

/// The maps a GPU has uploaded, each set with its device copy, by its words.
#[derive(Default)]
pub struct TensorMapCache(Mutex<HashMap<Vec<u64>, CudaSlice<u64>>>);

/// A row-major bf16 matrix, `rows × cols`, copied in boxes of `box_cols × box_rows` (at most 64
/// columns: one 128-byte swizzled row) into shared memory in the 128-byte swizzle; zeros for the
/// parts of a box outside the matrix.
pub fn bf16_swizzled(address: u64, (rows, cols): (u32, u32), (box_cols, box_rows): (u32, u32)) -> Result<TensorMap> {
    encode_swizzled(Element::Bf16, address, &[cols, rows], None, (box_cols, box_rows))
}

/// As [`bf16_swizzled`] for rows `pitch` bytes apart (a [`crate::Gpu::padded_copies`] copy):
/// zeros past column `cols` whatever the padding holds.
pub fn bf16_swizzled_pitched(
    address: u64,
    (rows, cols): (u32, u32),
    pitch: u64,
    (box_cols, box_rows): (u32, u32),
) -> Result<TensorMap> {
    encode_swizzled(Element::Bf16, address, &[cols, rows], Some(pitch), (box_cols, box_rows))
}

/// As [`bf16_swizzled`] for a row-major f32 matrix: boxes of at most 32 columns (one 128-byte
/// swizzled row). The bits are copied as they are; the tensor cores read them as TF32.
pub fn f32_swizzled(address: u64, (rows, cols): (u32, u32), (box_cols, box_rows): (u32, u32)) -> Result<TensorMap> {
    encode_swizzled(Element::F32, address, &[cols, rows], None, (box_cols, box_rows))
}

/// As [`f32_swizzled`] for rows `pitch` bytes apart, as [`bf16_swizzled_pitched`].
pub fn f32_swizzled_pitched(
    address: u64,
    (rows, cols): (u32, u32),
    pitch: u64,
    (box_cols, box_rows): (u32, u32),
) -> Result<TensorMap> {
    encode_swizzled(Element::F32, address, &[cols, rows], Some(pitch), (box_cols, box_rows))
}

/// As [`bf16_swizzled_pitched`] for a row-major matrix of 8-bit floats (e4m3 or e5m2: the bits are
/// copied as they are): boxes of at most 128 columns (one 128-byte swizzled row).
pub fn fp8_swizzled_pitched(
    address: u64,
    (rows, cols): (u32, u32),
    pitch: u64,
    (box_cols, box_rows): (u32, u32),
) -> Result<TensorMap> {
    encode_swizzled(Element::Fp8, address, &[cols, rows], Some(pitch), (box_cols, box_rows))
}

/// `heads` row-major bf16 matrices of `rows × cols` one after another (attention's
/// `[heads][seq][dim]`), copied as [`bf16_swizzled`] copies one, a box never crossing from one
/// matrix into the next: zeros past a matrix's last row.
pub fn bf16_swizzled_stack(
    address: u64,
    (heads, rows, cols): (u32, u32, u32),
    (box_cols, box_rows): (u32, u32),
) -> Result<TensorMap> {
    encode_swizzled(Element::Bf16, address, &[cols, rows, heads], None, (box_cols, box_rows))
}

/// The element types the maps copy.
#[derive(Clone, Copy)]
enum Element {
    Bf16,
    F32,
    Fp8,
}

impl Element {
    fn bytes(self) -> u32 {
        match self {
            Element::Fp8 => 1,
            Element::Bf16 => 2,
            Element::F32 => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Element::Fp8 => "fp8",
            Element::Bf16 => "bf16",
            Element::F32 => "f32",
        }
    }

    fn data_type(self) -> CUtensorMapDataType {
        match self {
            Element::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Element::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            Element::Fp8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        }
    }
}

/// The map of a tensor of `element`s of `dims` (innermost first, rank 2 or 3), rows `pitch`
/// bytes apart (dense where none is given), boxes of `box_cols × box_rows` (× 1 in the outer
/// dimension) in the 128-byte swizzle.
fn encode_swizzled(
    element: Element,
    address: u64,
    dims: &[u32],
    pitch: Option<u64>,
    (box_cols, box_rows): (u32, u32),
) -> Result<TensorMap> {
    let invalid = |reason: String| Error::InvalidInput {
        what: "a TMA tensor map".into(),
        reason,
    };
    let cols = dims[0];
    let (bytes, name) = (element.bytes(), element.name());
    let row_bytes = bytes as u64 * cols as u64;
    let pitch = pitch.unwrap_or(row_bytes);
    if !address.is_multiple_of(16) || !pitch.is_multiple_of(16) || pitch < row_bytes {
        return Err(invalid(format!(
            "the tensor at {address:#x} with rows of {cols} {name} {pitch} bytes apart: TMA needs a 16-byte aligned address and rows a multiple of 16 bytes apart"
        )));
    }
    if box_cols * bytes > 128 || box_rows > 256 || box_cols == 0 || box_rows == 0 {
        return Err(invalid(format!(
            "box {box_cols}×{box_rows} of {name}: at most 128 bytes of columns and 256 rows"
        )));
    }
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let sizes: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
    // Bytes from one row, and from one matrix, to the next.
    let strides: Vec<u64> = (1..dims.len())
        .map(|i| pitch * dims[1..i].iter().map(|&d| d as u64).product::<u64>())
        .collect();
    let boxes = [box_cols, box_rows, 1];
    let element_strides = [1u32; 3];
    let shape = dims.iter().map(u32::to_string).collect::<Vec<_>>().join("×");
    // SAFETY: every pointer is to a local at least as long as the rank (dims.len(), 2 or 3) asks
    // for; the driver only writes `map`.
    let result = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            element.data_type(),
            dims.len() as u32,
            address as *mut std::ffi::c_void,
            sizes.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    result
        .result()
        .doing(|| format!("encoding a tensor map of a {name} tensor of {shape} (innermost first)"))?;
    Ok(map.opaque)
}

impl Gpu {
    /// The device address of `maps` (consecutive, 128 bytes each) in global memory: uploaded
    /// once, then reused while the GPU keeps them. The upload is waited for, so a launch on any
    /// stream may read them.
    ///
    /// Past 4096 sets the cache is emptied, and first the whole device's queued work is
    /// waited for: the launches queued on any stream may still read the maps about to be freed,
    /// and the next upload may land where they were. (A CUDA graph captured before then reads
    /// freed maps: capture again after a model's first steps have named its arrays.)
    pub fn tensor_maps(&self, maps: &[TensorMap]) -> Result<u64> {
        let words: Vec<u64> = maps.iter().flatten().copied().collect();
        let mut cache = self.tensor_map_cache.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(device) = cache.get(&words) {
            return Ok(device_address(self, device));
        }
        if self.capturing()? {
            // The upload below waits for a copy, which a stream capture forbids (and the capture
            // would not replay it).
            return Err(Error::InvalidInput {
                what: "a launch during a CUDA graph capture".into(),
                reason: "its TMA kernel needs tensor maps of arrays it has not seen yet; call the operation once on the same arrays before capturing".into(),
            });
        }
        if cache.len() >= KEPT {
            self.ctx
                .synchronize()
                .doing(|| "waiting for the launches that read the tensor maps about to be freed".into())?;
            cache.clear();
        }
        let device = self.upload(&words)?;
        self.stream.synchronize().doing(|| "uploading tensor maps".into())?;
        let address = device_address(self, &device);
        cache.insert(words, device);
        Ok(address)
    }
}

impl Gpu {
    /// Whether the stream launches go to is capturing a CUDA graph.
    pub(crate) fn capturing(&self) -> Result<bool> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: writes one status; the stream is this GPU's or the live external one.
        unsafe { sys::cuStreamIsCapturing(self.launch_stream(), &mut status) }
            .result()
            .doing(|| "asking whether the stream is capturing".into())?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }
}

fn device_address(gpu: &Gpu, device: &CudaSlice<u64>) -> u64 {
    use cudarc::driver::DevicePtr;
    let (address, _guard) = device.device_ptr(gpu.stream());
    address
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused before the driver is asked: what TMA cannot take says so.
    #[test]
    fn a_pitch_tma_cannot_take_is_refused_with_the_rule() {
        let refused = |pitch| match bf16_swizzled_pitched(0x1000, (8, 50257), pitch, (64, 64)) {
            Err(Error::InvalidInput { reason, .. }) => reason,
            other => panic!("pitch {pitch}: expected a refusal, got {:?}", other.map(|_| ())),
        };
        assert!(refused(100_514).contains("multiple of 16 bytes apart"));
        // Aligned but shorter than a row.
        assert!(refused(100_480).contains("100480 bytes apart"));
        let unaligned = f32_swizzled(0x1004, (4, 32), (32, 4)).map(|_| ()).unwrap_err();
        assert!(unaligned.to_string().contains("16-byte aligned address"), "{unaligned}");
    }
}
