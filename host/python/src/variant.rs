//! `variant=`: which kernel of a family an operator runs. `auto` is what `host <family> --variant
//! auto` runs ([`kernels_host::families::auto`]): the device's tile configuration where the family has
//! several, elsewhere the fastest rung for the shape by the runner's figures; any kernel of the
//! family can be named, with or without its family prefix.

use kernels::elementwise::Elementwise;
use kernels::vec_add;
use kernels_host::families::{
    FamilyDemo, Size, attention, auto, conv2d, histogram, histogram_f32, kernel_index, matmul, matmul_bf16,
    matmul_bf16_rounded, matmul_fp8, norm, quantize_fp8, reduce, rows, scan, softmax, transpose,
};
use ptxkit::Kernel;
use ptxkit_runtime::Backend;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The operators whose kernels come from a family with a variant list.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Transpose,
    Softmax,
    Matmul,
    MatmulBf16,
    MatmulBf16Rounded,
    MatmulTf32,
    MatmulFp8,
    MatmulFp8Rowwise,
    MatmulFp8Blockwise,
    MatmulFp8RowwisePromoted,
    QuantizeFp8,
    Attention,
    AttentionCausal,
    AttentionAnyDim,
    AttentionAnyDimCausal,
    Conv2d,
    Sum,
    Cumsum,
    Histogram,
    HistogramF32,
    RowSum,
    RowMax,
    LayerNorm,
    RmsNorm,
}

impl Op {
    fn demo(self) -> &'static dyn FamilyDemo {
        match self {
            Op::Transpose => &transpose::TransposeDemo,
            Op::Softmax => &softmax::SoftmaxDemo,
            Op::Matmul => &matmul::MATMUL,
            Op::MatmulBf16 => &matmul_bf16::MatmulBf16Demo,
            Op::MatmulBf16Rounded => &matmul_bf16_rounded::MatmulBf16RoundedDemo,
            Op::MatmulTf32 => &matmul::MATMUL_TC,
            Op::MatmulFp8 => &matmul_fp8::PER_TENSOR,
            Op::MatmulFp8Rowwise => &matmul_fp8::ROW_WISE,
            Op::MatmulFp8Blockwise => &matmul_fp8::BLOCK_WISE,
            Op::MatmulFp8RowwisePromoted => &matmul_fp8::ROW_WISE_PROMOTED,
            Op::QuantizeFp8 => &quantize_fp8::QuantizeFp8Demo,
            Op::Attention => &attention::ATTENTION,
            Op::AttentionCausal => &attention::ATTENTION_CAUSAL,
            Op::AttentionAnyDim => &attention::ATTENTION_ANY_DIM,
            Op::AttentionAnyDimCausal => &attention::ATTENTION_ANY_DIM_CAUSAL,
            Op::Conv2d => &conv2d::Conv2dDemo,
            Op::Sum => &reduce::ReduceDemo,
            Op::Cumsum => &scan::ScanDemo,
            Op::Histogram => &histogram::HistogramDemo,
            Op::HistogramF32 => &histogram_f32::HistogramF32Demo,
            Op::RowSum => &rows::ROW_SUM,
            Op::RowMax => &rows::ROW_MAX,
            Op::LayerNorm => &norm::LAYER_NORM,
            Op::RmsNorm => &norm::RMS_NORM,
        }
    }

    /// The operator's name in Python.
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Cumsum => "cumsum",
            Op::MatmulTf32 => "matmul_tf32",
            other => other.demo().name(),
        }
    }

    fn by_name(name: &str) -> Option<Op> {
        [
            Op::Transpose,
            Op::Softmax,
            Op::Matmul,
            Op::MatmulBf16,
            Op::MatmulBf16Rounded,
            Op::MatmulTf32,
            Op::MatmulFp8,
            Op::MatmulFp8Rowwise,
            Op::MatmulFp8Blockwise,
            Op::MatmulFp8RowwisePromoted,
            Op::QuantizeFp8,
            Op::Attention,
            Op::AttentionCausal,
            Op::AttentionAnyDim,
            Op::AttentionAnyDimCausal,
            Op::Conv2d,
            Op::Sum,
            Op::Cumsum,
            Op::Histogram,
            Op::HistogramF32,
            Op::RowSum,
            Op::RowMax,
            Op::LayerNorm,
            Op::RmsNorm,
        ]
        .into_iter()
        .find(|op| op.name() == name)
    }
}

/// The configurations `auto` chose, by device, family and shape: the choice reads the device's
/// profile and asks the driver for occupancies (tens of µs), the same every time for a shape.
static CHOSEN: Mutex<BTreeMap<ShapeOn, usize>> = Mutex::new(BTreeMap::new());
/// A device, a family, a shape.
type ShapeOn = (usize, &'static str, [usize; 3]);
/// Shapes remembered before the memory starts over (a model has a few dozen).
const MAX_CHOSEN: usize = 4096;

/// The index in `op`'s family of the kernel `variant` names for a problem of `size`.
pub fn resolve(op: Op, backend: &Backend, variant: &str, size: [usize; 3]) -> PyResult<usize> {
    let demo = op.demo();
    if variant == "auto" {
        let Backend::Gpu(gpu) = backend else {
            unreachable!("the extension makes GPU backends only")
        };
        // The device's tile choice takes the driver's occupancy figures: once per shape.
        let key = (gpu.info().ordinal, demo.name(), size);
        let mut chosen = CHOSEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&kernel) = chosen.get(&key) {
            return Ok(kernel);
        }
        let kernel = auto::auto(backend, demo, Size(size))
            .map_err(crate::to_python)?
            .map(|a| a.kernel)
            .ok_or_else(|| PyValueError::new_err(format!("{} has no automatic choice: name a kernel", demo.name())))?;
        if chosen.len() >= MAX_CHOSEN {
            chosen.clear();
        }
        chosen.insert(key, kernel);
        return Ok(kernel);
    }
    kernel_index(demo, variant).ok_or_else(|| unknown(demo.name(), variant, &names_of(demo)))
}

fn names_of(demo: &dyn FamilyDemo) -> Vec<&'static str> {
    demo.kernels().iter().map(|k| k.entry).collect()
}

fn unknown(op: &str, variant: &str, names: &[&str]) -> PyErr {
    PyValueError::new_err(format!(
        "variant '{variant}' is not a {op} kernel; choose auto or one of {}",
        names.join(", ")
    ))
}

/// The kernel of `add`: the 16-byte one unless the seed's is asked for.
pub fn add_kernel(variant: &str) -> PyResult<&'static Kernel<Elementwise>> {
    match variant {
        "auto" | "vec_add_vectorized" => Ok(&vec_add::vectorized::KERNEL),
        "vec_add" => Ok(&vec_add::KERNEL),
        _ => Err(unknown("add", variant, &ADD_NAMES)),
    }
}

const ADD_NAMES: [&str; 2] = ["vec_add_vectorized", "vec_add"];

/// Every kernel `op` can be asked for by name.
pub fn names(op: &str) -> PyResult<Vec<&'static str>> {
    if op == "add" {
        return Ok(ADD_NAMES.to_vec());
    }
    Op::by_name(op).map(|op| names_of(op.demo())).ok_or_else(|| {
        PyValueError::new_err(format!(
            "'{op}' is not an operator with variants; choose add, attention, attention_causal, attention_any_dim, attention_any_dim_causal, conv2d, cumsum, histogram, histogram_f32, layer_norm, matmul, matmul_bf16, matmul_bf16_rounded, matmul_tf32, rms_norm, row_max, row_sum, softmax, sum or transpose"
        ))
    })
}
