//! `rust_kernels._native`: the project's kernels for Python. Each function takes CUDA arrays (any
//! object with `__cuda_array_interface__`: PyTorch tensors, CuPy arrays), the raw handle of the
//! stream to launch on (PyTorch's current stream) and the device's index, checks what it was given
//! (type, shape, contiguity; then that the memory is the device's and large enough: a
//! `torch.Tensor` by its device index, as torch's own metadata has it, any other array with the
//! driver), and queues the kernel on that stream through the host crate's one launch path
//! ([`ptxkit_runtime::Gpu::on_external_stream`], [`ptxkit_runtime::ExternalArray`]). Outputs are allocated
//! by the caller (the Python layer, `rust_kernels/operators.py`, with torch).
//!
//! Everything that can be checked without a GPU is checked before the driver is loaded, so argument
//! errors read the same on any machine.

mod interface;
mod variant;

use interface::{Dtype, Tensor};
use kernels::Source;
use kernels_host::families;
use ptxkit_runtime::Backend;
use ptxkit_runtime::{ExternalArray, ExternalStream, Gpu};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use variant::Op;

/// A host error as the Python exception that fits it: bad arguments are `ValueError`s, a missing
/// driver or device and failed launches are `RuntimeError`s.
fn to_python(error: ptxkit_runtime::Error) -> PyErr {
    use ptxkit_runtime::Error as E;
    match error {
        E::InvalidInput { .. } | E::WrongMemory { .. } | E::TooLarge { .. } | E::InvalidSize(_) => {
            PyValueError::new_err(error.to_string())
        }
        E::NoDriver => PyRuntimeError::new_err(
            "rust_kernels needs an NVIDIA GPU: no NVIDIA driver was found (libcuda could not be loaded)",
        ),
        _ => PyRuntimeError::new_err(error.to_string()),
    }
}

/// A problem size no kernel can run, as a `ValueError` naming it.
fn size_error(error: ptxkit::InvalidSize) -> PyErr {
    to_python(error.into())
}

/// The GPUs opened so far, by device index: opening one loads every kernel into the device's
/// primary context (the one PyTorch uses), once.
static GPUS: Mutex<Vec<Option<Arc<Gpu>>>> = Mutex::new(Vec::new());

fn gpu(device: usize) -> PyResult<Arc<Gpu>> {
    let mut gpus = GPUS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(Some(gpu)) = gpus.get(device) {
        return Ok(gpu.clone());
    }
    let gpu = Arc::new(kernels_host::open_gpu(Some(device)).map_err(to_python)?);
    if gpus.len() <= device {
        gpus.resize(device + 1, None);
    }
    gpus[device] = Some(gpu.clone());
    Ok(gpu)
}

/// The backend that launches on `stream` of `device`.
fn backend(device: usize, stream: usize) -> PyResult<Backend> {
    let gpu = gpu(device)?;
    // SAFETY: the stream is the caller's current stream of `device` (the Python layer passes
    // torch.cuda.current_stream(device).cuda_stream), alive while the call's launches are queued.
    let stream = unsafe { ExternalStream::from_raw(stream) };
    Ok(Backend::Gpu(Box::new(gpu.on_external_stream(stream))))
}

/// `tensor` as an array of the launch: a `torch.Tensor` on its word (its device checked against
/// the launch's), anything else checked against the driver's records.
fn array<T: ptxkit_runtime::array::Element>(backend: &Backend, tensor: &Tensor) -> PyResult<ExternalArray<T>> {
    let Backend::Gpu(gpu) = backend else {
        unreachable!("the extension makes GPU backends only")
    };
    let device = gpu.info().ordinal;
    match tensor.torch_device {
        Some(on) if on != device => Err(PyValueError::new_err(format!(
            "{}: the tensor is on cuda:{on}, the launch on cuda:{device}; move it first (.to('cuda:{device}'))",
            tensor.name
        ))),
        // SAFETY: a contiguous torch.Tensor (the exact type) on this device: torch's storage
        // holds its len() elements from its data pointer, allocated in the device's primary
        // context (where torch allocates, and which this GPU uses); the Python object holds the
        // memory for the whole call, and the caller orders its other uses on the launch's stream.
        Some(_) => unsafe { ExternalArray::of_framework(tensor.address, tensor.len()) }.map_err(to_python),
        // SAFETY: the tensor's memory is held by the Python object for the whole call, and the
        // caller orders its other uses on the stream the launch goes to (PyTorch's stream
        // semantics); its length comes from its own interface.
        None => unsafe { ExternalArray::new(gpu, tensor.address, tensor.len()) }.map_err(to_python),
    }
}

/// `output = inputᵀ` for a rows × cols f32 matrix.
#[pyfunction]
#[pyo3(signature = (input, output, *, stream, device, variant = "auto"))]
fn transpose(input: &Bound<PyAny>, output: &Bound<PyAny>, stream: usize, device: usize, variant: &str) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let output = Tensor::read("output", output, Dtype::F32, 2)?.writable()?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    output.expect_shape(&[cols, rows])?;
    let problem = kernels::transpose::Transpose::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = variant::resolve(Op::Transpose, &backend, variant, [rows, cols, 1])?;
    let (input, mut output) = (array(&backend, &input)?, array(&backend, &output)?);
    families::transpose::launch(
        &backend,
        &kernels::transpose::FAMILY.kernels[kernel],
        Source::Rust,
        &problem,
        &input,
        &mut output,
    )
    .map_err(to_python)
}

/// The softmax of each row of a rows × cols f32 matrix.
#[pyfunction]
#[pyo3(signature = (input, output, *, stream, device, variant = "auto"))]
fn softmax(input: &Bound<PyAny>, output: &Bound<PyAny>, stream: usize, device: usize, variant: &str) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let output = Tensor::read("output", output, Dtype::F32, 2)?.writable()?;
    output.expect_shape(&input.shape)?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    let problem = kernels::softmax::Softmax::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = variant::resolve(Op::Softmax, &backend, variant, [rows, cols, 1])?;
    let (input, mut output) = (array(&backend, &input)?, array(&backend, &output)?);
    families::softmax::launch(
        &backend,
        &kernels::softmax::FAMILY.kernels[kernel],
        Source::Rust,
        &problem,
        &input,
        &mut output,
    )
    .map_err(to_python)
}

/// The operands of `c = a · b`: a (m × k) and b (k × n) of `operands`, c (m × n) f32 and
/// writable; and m, n, k.
fn product_operands(
    abc: (&Bound<PyAny>, &Bound<PyAny>, &Bound<PyAny>),
    operands: Dtype,
) -> PyResult<(Tensor, Tensor, Tensor, [usize; 3])> {
    product_operands_into(abc, operands, Dtype::F32)
}

/// As [`product_operands`], c of `output`.
fn product_operands_into(
    (a, b, c): (&Bound<PyAny>, &Bound<PyAny>, &Bound<PyAny>),
    operands: Dtype,
    output: Dtype,
) -> PyResult<(Tensor, Tensor, Tensor, [usize; 3])> {
    let a = Tensor::read("a", a, operands, 2)?;
    let b = Tensor::read("b", b, operands, 2)?;
    let c = Tensor::read("c", c, output, 2)?.writable()?;
    let [m, k] = [a.shape[0], a.shape[1]];
    let n = b.shape[1];
    b.expect_shape(&[k, n])?;
    c.expect_shape(&[m, n])?;
    Ok((a, b, c, [m, n, k]))
}

/// `c = a · b` for f32 matrices a (m × k) and b (k × n), row-major.
#[pyfunction]
#[pyo3(signature = (a, b, c, stream, device, variant = "auto"))]
fn matmul(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    c: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let (a, b, c, [m, n, k]) = product_operands((a, b, c), Dtype::F32)?;
    let problem = kernels::matmul::Matmul::new(m, n, k).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = &kernels::matmul::FAMILY.kernels[variant::resolve(Op::Matmul, &backend, variant, [m, n, k])?];
    let (a, b, mut c) = (array(&backend, &a)?, array(&backend, &b)?, array(&backend, &c)?);
    families::matmul::launch(&backend, kernel, Source::Rust, &problem, &a, &b, &mut c).map_err(to_python)
}

/// `c = a · b` for bf16 matrices a (m × k) and b (k × n), row-major, into f32 c (m × n): f32
/// sums of exact products, on the tensor cores.
#[pyfunction]
#[pyo3(signature = (a, b, c, stream, device, variant = "auto"))]
fn matmul_bf16(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    c: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let (a, b, c, [m, n, k]) = product_operands((a, b, c), Dtype::Bf16)?;
    let problem = kernels::matmul_bf16::MatmulBf16::new(m, n, k).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let family = &kernels::matmul_bf16::FAMILY;
    let kernel = &family.kernels[variant::resolve(Op::MatmulBf16, &backend, variant, [m, n, k])?];
    let (a, b, mut c) = (array(&backend, &a)?, array(&backend, &b)?, array(&backend, &c)?);
    families::matmul_bf16::launch(&backend, kernel, Source::Rust, &problem, &a, &b, &mut c).map_err(to_python)
}

/// `c = a · b` for bf16 matrices a (m × k) and b (k × n), row-major, into bf16 c (m × n): f32
/// sums of exact products on the tensor cores, each rounded once to bf16.
#[pyfunction]
#[pyo3(signature = (a, b, c, stream, device, variant = "auto"))]
fn matmul_bf16_rounded(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    c: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let (a, b, c, [m, n, k]) = product_operands_into((a, b, c), Dtype::Bf16, Dtype::Bf16)?;
    let problem = kernels::matmul_bf16::rounded::MatmulBf16Rounded::new(m, n, k).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let family = &kernels::matmul_bf16::rounded::FAMILY;
    let kernel = &family.kernels[variant::resolve(Op::MatmulBf16Rounded, &backend, variant, [m, n, k])?];
    let (a, b, mut c) = (array(&backend, &a)?, array(&backend, &b)?, array(&backend, &c)?);
    families::matmul_bf16_rounded::launch(&backend, kernel, Source::Rust, &problem, &a, &b, &mut c).map_err(to_python)
}

/// `c = scale_a · scale_b · (a · b)` for e4m3 a (m × k) and b given as its transpose `bt`
/// (n × k: the column-major b of `torch._scaled_mm`), row-major, into bf16 c (m × n): f32 sums
/// of exact products, scaled and rounded once. `scaling` says what the scales hold: `"tensor"`,
/// one f32 each; `"row"`, m and n f32 (c's element (i, j) scaled by `scale_a[i] · scale_b[j]`);
/// `"block"`, a's factors per block of 128 of k and row (⌈k/128⌉ × m, row-major) and b's per
/// block of 128 columns and of k (⌈n/128⌉ × ⌈k/128⌉), each block's sums scaled into f32 totals;
/// `"row_promoted"`, as `"row"` over f32 totals of each block of 128 of k.
#[pyfunction]
#[pyo3(signature = (a, bt, c, scale_a, scale_b, stream, device, variant = "auto", scaling = "tensor"))]
#[allow(clippy::too_many_arguments)]
fn matmul_fp8(
    a: &Bound<PyAny>,
    bt: &Bound<PyAny>,
    c: &Bound<PyAny>,
    scale_a: &Bound<PyAny>,
    scale_b: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
    scaling: &str,
) -> PyResult<()> {
    use kernels_host::families::matmul_fp8::Scales;
    let a = Tensor::read("a", a, Dtype::E4m3, 2)?;
    let bt = Tensor::read("b (as its transpose)", bt, Dtype::E4m3, 2)?;
    let c = Tensor::read("c", c, Dtype::Bf16, 2)?.writable()?;
    let scales = [
        Tensor::read("scale_a", scale_a, Dtype::F32, 0)?,
        Tensor::read("scale_b", scale_b, Dtype::F32, 0)?,
    ];
    let [m, k] = [a.shape[0], a.shape[1]];
    let n = bt.shape[0];
    bt.expect_shape(&[n, k])?;
    c.expect_shape(&[m, n])?;
    let (op, kind) = match scaling {
        "tensor" => (Op::MatmulFp8, Scales::PerTensor),
        "row" => (Op::MatmulFp8Rowwise, Scales::RowWise),
        "block" => (Op::MatmulFp8Blockwise, Scales::BlockWise),
        "row_promoted" => (Op::MatmulFp8RowwisePromoted, Scales::RowWisePromoted),
        other => {
            return Err(PyValueError::new_err(format!(
                "scaling: {other:?} given; \"tensor\", \"row\", \"block\" or \"row_promoted\" expected"
            )));
        }
    };
    let family = kind.family();
    let problem = kernels::matmul_fp8::MatmulFp8::new(m, n, k).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = &family.kernels[variant::resolve(op, &backend, variant, [m, n, k])?];
    let (a, bt, mut c) = (array(&backend, &a)?, array(&backend, &bt)?, array(&backend, &c)?);
    let [scale_a, scale_b] = [array(&backend, &scales[0])?, array(&backend, &scales[1])?];
    families::matmul_fp8::launch(
        &backend,
        kernel,
        Source::Rust,
        &problem,
        &a,
        &bt,
        &mut c,
        (&scale_a, &scale_b),
    )
    .map_err(to_python)
}

/// FP8 quantisation of an f32 matrix (rows × cols, row-major) into e4m3 `codes` (as many) and
/// f32 `scales` (rows × ⌈cols/group⌉): each group of `group` consecutive elements of a row (the
/// last may be shorter) gets the scale `amax / 448` (amax at least 1e-12) and codes
/// `x · 448 / amax` to the nearest e4m3, clamped to ±448; the group's values are its codes times
/// its scale.
#[pyfunction]
#[pyo3(signature = (input, codes, scales, group, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn quantize_fp8(
    input: &Bound<PyAny>,
    codes: &Bound<PyAny>,
    scales: &Bound<PyAny>,
    group: usize,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let codes = Tensor::read("codes", codes, Dtype::E4m3, 2)?.writable()?;
    let scales = Tensor::read("scales", scales, Dtype::F32, 2)?.writable()?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    let problem = kernels::quantize_fp8::QuantizeFp8::new(rows, cols, group).map_err(size_error)?;
    codes.expect_shape(&[rows, cols])?;
    scales.expect_shape(&[rows, problem.groups_per_row() as usize])?;
    let backend = backend(device, stream)?;
    let size = [rows, cols, problem.group as usize];
    let kernel = &kernels::quantize_fp8::FAMILY.kernels[variant::resolve(Op::QuantizeFp8, &backend, variant, size)?];
    let (input, mut codes, mut scales) = (
        array(&backend, &input)?,
        array(&backend, &codes)?,
        array(&backend, &scales)?,
    );
    families::quantize_fp8::launch(
        &backend,
        kernel,
        Source::Rust,
        &problem,
        &input,
        &mut codes,
        &mut scales,
    )
    .map_err(to_python)
}

/// `c = a · b` for f32 matrices a (m × k) and b (k × n), row-major, on the tensor cores: each
/// operand read as TF32 (10 mantissa bits), f32 sums (PyTorch's `a @ b` with TF32 allowed).
#[pyfunction]
#[pyo3(signature = (a, b, c, stream, device, variant = "auto"))]
fn matmul_tf32(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    c: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let (a, b, c, [m, n, k]) = product_operands((a, b, c), Dtype::F32)?;
    let problem = kernels::matmul_tc::MatmulTc::new(m, n, k).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let family = &kernels::matmul_tc::FAMILY;
    let kernel = &family.kernels[variant::resolve(Op::MatmulTf32, &backend, variant, [m, n, k])?];
    let (a, b, mut c) = (array(&backend, &a)?, array(&backend, &b)?, array(&backend, &c)?);
    families::matmul_tc::launch(&backend, kernel, Source::Rust, &problem, &a, &b, &mut c).map_err(to_python)
}

/// `o = softmax(q·kᵀ/√d)·v` per head for bf16 q and o of shape (batch, heads, seq, dim), k and v
/// (batch, heads_kv, seq, dim) with heads_kv dividing heads (each KV head shared by heads /
/// heads_kv consecutive query heads), over every key or (`causal`) the keys up to each query's
/// position; one fused kernel: dim 64 or 128 from the attention families, any other multiple of 8
/// up to 128 from the any-dimension ones (`variant` names a kernel of the family the dim goes to).
/// `lse`, where given, takes each query row's log-sum-exp (float32, batch·heads·seq elements, log2
/// units of the scaled scores: what [`attention_backward`] reads with `saved_lse`).
#[pyfunction]
#[pyo3(signature = (q, k, v, o, *, lse = None, stream, device, causal = false, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn attention(
    q: &Bound<PyAny>,
    k: &Bound<PyAny>,
    v: &Bound<PyAny>,
    o: &Bound<PyAny>,
    lse: Option<&Bound<PyAny>>,
    stream: usize,
    device: usize,
    causal: bool,
    variant: &str,
) -> PyResult<()> {
    let q = Tensor::read("q", q, Dtype::Bf16, 4)?;
    let k = Tensor::read("k", k, Dtype::Bf16, 4)?;
    let v = Tensor::read("v", v, Dtype::Bf16, 4)?;
    let o = Tensor::read("o", o, Dtype::Bf16, 4)?.writable()?;
    o.expect_shape(&q.shape)?;
    v.expect_shape(&k.shape)?;
    let [batch, heads, seq, dim] = [q.shape[0], q.shape[1], q.shape[2], q.shape[3]];
    let lse = match lse {
        Some(lse) => {
            let lse = Tensor::read("lse", lse, Dtype::F32, 3)?.writable()?;
            lse.expect_shape(&[batch, heads, seq])?;
            Some(lse)
        }
        None => None,
    };
    let heads_kv = grouped_heads(&q, &k)?;
    let built = kernels::attention::DIMS.contains(&(dim as u32));
    let problem = if built {
        kernels::attention::Attention::grouped(batch * heads, heads / heads_kv, seq, dim)
    } else {
        kernels::attention::Attention::any_dim(batch * heads, heads / heads_kv, seq, dim)
    }
    .map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (op, family) = match (built, causal) {
        (true, true) => (Op::AttentionCausal, &kernels::attention::CAUSAL_FAMILY),
        (true, false) => (Op::Attention, &kernels::attention::FAMILY),
        (false, true) => (Op::AttentionAnyDimCausal, &kernels::attention::ANY_DIM_CAUSAL_FAMILY),
        (false, false) => (Op::AttentionAnyDim, &kernels::attention::ANY_DIM_FAMILY),
    };
    let kernel = &family.kernels[variant::resolve(op, &backend, variant, [batch * heads, seq, dim])?];
    let (q, k, v, mut o) = (
        array(&backend, &q)?,
        array(&backend, &k)?,
        array(&backend, &v)?,
        array(&backend, &o)?,
    );
    match lse {
        Some(lse) => {
            let mut lse = array::<f32>(&backend, &lse)?;
            families::attention::launch_with_lse(
                &backend,
                kernel,
                Source::Rust,
                &problem,
                (&q, &k, &v),
                (&mut o, &mut lse),
            )
        }
        None => families::attention::launch(&backend, kernel, Source::Rust, &problem, (&q, &k, &v), &mut o),
    }
    .map_err(to_python)
}

/// dQ, dK and dV of `o = attention(q, k, v)` (bf16, q, o, dO and dQ `(batch, heads, seq, dim)`, k,
/// v, dK and dV `(batch, heads_kv, seq, dim)`, heads_kv dividing heads) from the output's gradient
/// `d_o`, every key or (`causal`) the forward's mask: on sm_90a at head dimensions 64 and 128 the
/// `wgmma` pass's three launches, else `mma.sync`'s two (`families::attention_backward::pass_for`).
/// `stats` holds `AttentionBackward::stats_len` floats (each row's lse and Δ, then f32 sums of dQ:
/// the pass's scratch); with `saved_lse` its first batch·heads·seq floats hold the forward's lse
/// (`attention`'s `lse`), which the `wgmma` pass then reads instead of recomputing.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, d_o, dq, dk, dv, stats, *, stream, device, causal = false, saved_lse = false))]
#[allow(clippy::too_many_arguments)]
fn attention_backward(
    q: &Bound<PyAny>,
    k: &Bound<PyAny>,
    v: &Bound<PyAny>,
    o: &Bound<PyAny>,
    d_o: &Bound<PyAny>,
    dq: &Bound<PyAny>,
    dk: &Bound<PyAny>,
    dv: &Bound<PyAny>,
    stats: &Bound<PyAny>,
    stream: usize,
    device: usize,
    causal: bool,
    saved_lse: bool,
) -> PyResult<()> {
    let read = |name, t| Tensor::read(name, t, Dtype::Bf16, 4);
    let (q, k, v, o, d_o) = (
        read("q", q)?,
        read("k", k)?,
        read("v", v)?,
        read("o", o)?,
        read("d_o", d_o)?,
    );
    let (dq, dk, dv) = (
        read("dq", dq)?.writable()?,
        read("dk", dk)?.writable()?,
        read("dv", dv)?.writable()?,
    );
    let stats = Tensor::read("stats", stats, Dtype::F32, 1)?.writable()?;
    for t in [&o, &d_o, &dq] {
        t.expect_shape(&q.shape)?;
    }
    for t in [&v, &dk, &dv] {
        t.expect_shape(&k.shape)?;
    }
    let [batch, heads, seq, dim] = [q.shape[0], q.shape[1], q.shape[2], q.shape[3]];
    let heads_kv = grouped_heads(&q, &k)?;
    let forward =
        kernels::attention::Attention::any_dim(batch * heads, heads / heads_kv, seq, dim).map_err(size_error)?;
    let problem = kernels::attention::backward::AttentionBackward::new(forward).map_err(size_error)?;
    stats.expect_shape(&[problem.stats_len()])?;
    let backend = backend(device, stream)?;
    let arrays = |t: &Tensor| array::<u16>(&backend, t);
    let (q, k, v, o, d_o) = (arrays(&q)?, arrays(&k)?, arrays(&v)?, arrays(&o)?, arrays(&d_o)?);
    let (mut dq, mut dk, mut dv) = (arrays(&dq)?, arrays(&dk)?, arrays(&dv)?);
    let mut stats = array::<f32>(&backend, &stats)?;
    let gradients = families::attention_backward::BackwardArrays {
        q: &q,
        k: &k,
        v: &v,
        o: &o,
        d_o: &d_o,
        dq: &mut dq,
        dk: &mut dk,
        dv: &mut dv,
        stats: &mut stats,
    };
    let pass = families::attention_backward::pass_for(&backend, &problem, causal, saved_lse, Source::Rust);
    families::attention_backward::launch(&backend, &pass, Source::Rust, &problem, gradients).map_err(to_python)
}

/// K's heads, where K is `(batch, heads_kv, seq, dim)` with Q's batch, sequence and dimension and
/// heads_kv dividing Q's heads (each KV head serving a group of query heads).
fn grouped_heads(q: &Tensor, k: &Tensor) -> PyResult<usize> {
    let [batch, heads, seq, dim] = [q.shape[0], q.shape[1], q.shape[2], q.shape[3]];
    let heads_kv = k.shape[1];
    if [k.shape[0], k.shape[2], k.shape[3]] != [batch, seq, dim] || heads_kv == 0 || heads % heads_kv != 0 {
        return Err(PyValueError::new_err(format!(
            "k {:?}: expected (batch, heads_kv, seq, dim) = ({batch}, a divisor of {heads}, {seq}, {dim})",
            k.shape
        )));
    }
    Ok(heads_kv)
}

/// The decoding problem of Q `(batch, heads, queries, dim)` over K and V `(batch, heads_kv, keys,
/// dim)` on `backend`: runs of keys sized for its SMs.
fn decode_problem(
    backend: &Backend,
    [batch, heads, queries, dim]: [usize; 4],
    [heads_kv, keys]: [usize; 2],
    causal: bool,
) -> PyResult<kernels::attention::Decode> {
    let warps = families::attention_decode::warps_wanted(backend).map_err(to_python)?;
    kernels::attention::Decode::new((batch, heads, heads_kv), queries, keys, dim, causal, warps).map_err(size_error)
}

/// Floats of `stats` that [`attention_backward`] takes for q of shape `q_shape` `(batch, heads,
/// seq, dim)`: each row's lse and Δ, then the f32 sums of dQ.
#[pyfunction]
fn attention_backward_stats_len(q_shape: [usize; 4]) -> PyResult<usize> {
    let [batch, heads, seq, dim] = q_shape;
    let forward = kernels::attention::Attention::any_dim(batch * heads, 1, seq, dim).map_err(size_error)?;
    let problem = kernels::attention::backward::AttentionBackward::new(forward).map_err(size_error)?;
    Ok(problem.stats_len())
}

/// Floats of the partial sums [`attention_decode`] needs for these shapes on `device` (0 where
/// the keys take one run).
#[pyfunction]
#[pyo3(signature = (q_shape, kv_shape, *, device, causal = false))]
fn attention_decode_partial_len(
    q_shape: [usize; 4],
    kv_shape: [usize; 4],
    device: usize,
    causal: bool,
) -> PyResult<usize> {
    let backend = backend(device, 0)?;
    let problem = decode_problem(&backend, q_shape, [kv_shape[1], kv_shape[2]], causal)?;
    Ok(problem.partial_len())
}

/// `o = softmax(q·kᵀ/√d)·v` for bf16 q `(batch, heads, queries, dim)` over k and v `(batch,
/// heads_kv, keys, dim)`, `heads_kv` dividing `heads` (query head h reads KV head h / (heads /
/// heads_kv)), dim 64 or 128; with `causal` query i attends to keys 0..=i (SDPA's top-left mask).
/// Flash-decoding: the keys in runs on their own warps, then a second launch weighing the runs;
/// `partial` holds [`attention_decode_partial_len`] floats.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, partial, *, stream, device, causal = false, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn attention_decode(
    q: &Bound<PyAny>,
    k: &Bound<PyAny>,
    v: &Bound<PyAny>,
    o: &Bound<PyAny>,
    partial: &Bound<PyAny>,
    stream: usize,
    device: usize,
    causal: bool,
    variant: &str,
) -> PyResult<()> {
    let q = Tensor::read("q", q, Dtype::Bf16, 4)?;
    let k = Tensor::read("k", k, Dtype::Bf16, 4)?;
    let v = Tensor::read("v", v, Dtype::Bf16, 4)?;
    let o = Tensor::read("o", o, Dtype::Bf16, 4)?.writable()?;
    let partial = Tensor::read("partial", partial, Dtype::F32, 1)?.writable()?;
    o.expect_shape(&q.shape)?;
    v.expect_shape(&k.shape)?;
    let [batch, heads, queries, dim] = [q.shape[0], q.shape[1], q.shape[2], q.shape[3]];
    if k.shape[0] != batch || k.shape[3] != dim {
        return Err(PyValueError::new_err(format!(
            "k {:?}: expected (batch, heads_kv, keys, dim) with q's batch {batch} and dim {dim}",
            k.shape
        )));
    }
    let backend = backend(device, stream)?;
    let problem = decode_problem(&backend, [batch, heads, queries, dim], [k.shape[1], k.shape[2]], causal)?;
    let family = if causal {
        &kernels::attention::DECODE_CAUSAL_FAMILY
    } else {
        &kernels::attention::DECODE_FAMILY
    };
    let kernel = match variant {
        "auto" => &family.kernels[0],
        name => family.kernels.iter().find(|k| k.entry() == name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "variant '{name}' is not a kernel for queries other than the keys or grouped heads; choose auto or {}",
                family.kernels[0].entry()
            ))
        })?,
    };
    let (q, k, v, mut o, mut partial) = (
        array(&backend, &q)?,
        array(&backend, &k)?,
        array(&backend, &v)?,
        array(&backend, &o)?,
        array::<f32>(&backend, &partial)?,
    );
    let arrays = families::attention_decode::DecodeArrays {
        q: &q,
        k: &k,
        v: &v,
        o: &mut o,
        partial: &mut partial,
    };
    families::attention_decode::launch(&backend, kernel, Source::Rust, &problem, arrays).map_err(to_python)
}

/// The 2-D cross-correlation of a height × width f32 image with a square filter (3×3, 5×5 or
/// 7×7), zero outside the image, output the image's size: PyTorch's `conv2d` with `padding=r`.
#[pyfunction]
#[pyo3(signature = (image, filter, output, *, stream, device, variant = "auto"))]
fn conv2d(
    image: &Bound<PyAny>,
    filter: &Bound<PyAny>,
    output: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let image = Tensor::read("image", image, Dtype::F32, 2)?;
    let filter = Tensor::read("filter", filter, Dtype::F32, 2)?;
    let output = Tensor::read("output", output, Dtype::F32, 2)?.writable()?;
    output.expect_shape(&image.shape)?;
    let side = filter.shape[0];
    filter.expect_shape(&[side, side])?;
    let [height, width] = [image.shape[0], image.shape[1]];
    let problem = kernels::conv2d::Conv2d::new(height, width, side).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = variant::resolve(Op::Conv2d, &backend, variant, [height, width, side])?;
    let (image, filter, mut output) = (
        array(&backend, &image)?,
        array(&backend, &filter)?,
        array(&backend, &output)?,
    );
    families::conv2d::launch(
        &backend,
        &kernels::conv2d::FAMILY.kernels[kernel],
        Source::Rust,
        &problem,
        (&image, &filter),
        &mut output,
    )
    .map_err(to_python)
}

/// `out = a + b` elementwise over n f32 values (any shape, the same for all three): the seeds'
/// `vec_add`. `stream` and `device` may be given by position too: the operators pass them so,
/// building no keyword dict on their side per call.
#[pyfunction]
#[pyo3(signature = (a, b, out, stream, device, variant = "auto"))]
fn add(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    out: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    elementwise(variant::add_kernel(variant)?, [a, b, out], stream, device)
}

/// The first seed's shared-memory example over n f32 values: `s = a + b` staged in shared memory,
/// then each element plus its left neighbour's `s` within blocks of 256 (a block's first alone).
#[pyfunction]
#[pyo3(signature = (a, b, out, stream, device))]
fn shared_mem_add(
    a: &Bound<PyAny>,
    b: &Bound<PyAny>,
    out: &Bound<PyAny>,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    elementwise(&kernels::shared_mem_add::KERNEL, [a, b, out], stream, device)
}

/// An element-wise kernel over two inputs and an output of one shape.
fn elementwise(
    kernel: &ptxkit::Kernel<kernels::elementwise::Elementwise>,
    [a, b, out]: [&Bound<PyAny>; 3],
    stream: usize,
    device: usize,
) -> PyResult<()> {
    let a = Tensor::read("a", a, Dtype::F32, 0)?;
    let b = Tensor::read("b", b, Dtype::F32, 0)?;
    let out = Tensor::read("out", out, Dtype::F32, 0)?.writable()?;
    b.expect_shape(&a.shape)?;
    out.expect_shape(&a.shape)?;
    let problem = kernels::elementwise::Elementwise::new(a.len()).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (a, b, mut out) = (array(&backend, &a)?, array(&backend, &b)?, array(&backend, &out)?);
    families::elementwise::launch(&backend, kernel, Source::Rust, &problem, &a, &b, &mut out).map_err(to_python)
}

/// Elements each of `sum`'s scratch arrays needs for `n` elements with `variant` on `device`,
/// and whether one launch does it (then the sum is element 0 of the first, the second is not
/// used, and the ticket is left at zero for the next call).
#[pyfunction]
#[pyo3(signature = (n, *, device, variant = "auto"))]
fn sum_scratch_len(n: usize, device: usize, variant: &str) -> PyResult<(usize, bool)> {
    let backend = backend(device, 0)?;
    let (kernel, problem) = sum_problem(&backend, n, variant)?;
    let one_pass = kernels::reduce::passes(kernel.entry()) == kernels::reduce::Passes::One;
    Ok((families::reduce::output_len(kernel, &problem), one_pass))
}

fn sum_problem(
    backend: &Backend,
    n: usize,
    variant: &str,
) -> PyResult<(
    &'static ptxkit::Kernel<kernels::reduce::Reduce>,
    kernels::reduce::Reduce,
)> {
    let kernel = &kernels::reduce::FAMILY.kernels[variant::resolve(Op::Sum, backend, variant, [n, 1, 1])?];
    let blocks = families::reduce::resident_blocks(backend, kernels::reduce::THREADS);
    let problem = kernels::reduce::Reduce::new(n, blocks).map_err(size_error)?;
    Ok((kernel, problem))
}

/// The sum of the n f32 of `input` (any shape) into element 0 of `scratch0` or `scratch1` (each
/// [`sum_scratch_len`] long; `scratch1` may be `None` where one launch does it); `ticket` is one
/// zeroed 32-bit integer, left at zero. Returns which scratch array holds the sum.
#[pyfunction]
#[pyo3(signature = (input, scratch0, scratch1, ticket, *, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn sum(
    input: &Bound<PyAny>,
    scratch0: &Bound<PyAny>,
    scratch1: Option<&Bound<PyAny>>,
    ticket: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<usize> {
    let input = Tensor::read("input", input, Dtype::F32, 0)?;
    let first = Tensor::read("scratch0", scratch0, Dtype::F32, 1)?.writable()?;
    let second = scratch1
        .map(|s| Tensor::read("scratch1", s, Dtype::F32, 1)?.writable())
        .transpose()?;
    let ticket = Tensor::read("ticket", ticket, Dtype::U32, 1)?.writable()?;
    ticket.expect_shape(&[1])?;
    let backend = backend(device, stream)?;
    let (kernel, problem) = sum_problem(&backend, input.len(), variant)?;
    let input = array(&backend, &input)?;
    let mut ticket = array::<u32>(&backend, &ticket)?;
    let mut first = array(&backend, &first)?;
    let Some(second) = second else {
        if kernels::reduce::passes(kernel.entry()) != kernels::reduce::Passes::One {
            return Err(PyValueError::new_err(format!(
                "scratch1: {} takes several launches and needs the second scratch array",
                kernel.entry()
            )));
        }
        families::reduce::launch(
            &backend,
            kernel,
            Source::Rust,
            &problem,
            &input,
            &mut first,
            &mut ticket,
        )
        .map_err(to_python)?;
        return Ok(0);
    };
    let mut scratch = [first, array(&backend, &second)?];
    families::reduce::complete(
        &backend,
        kernel,
        Source::Rust,
        &problem,
        &input,
        &mut scratch,
        &mut ticket,
    )
    .map_err(to_python)
}

/// `bins += histogram(input)`: the 256 counts of the byte values of `input` (uint8, any shape,
/// every element) added to `bins` (256 int32 or uint32, zero for a fresh histogram).
#[pyfunction]
#[pyo3(signature = (input, bins, *, stream, device, variant = "auto"))]
fn histogram(input: &Bound<PyAny>, bins: &Bound<PyAny>, stream: usize, device: usize, variant: &str) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::U8, 0)?;
    let bins = Tensor::read("bins", bins, Dtype::U32, 1)?.writable()?;
    bins.expect_shape(&[kernels::histogram::BINS as usize])?;
    let backend = backend(device, stream)?;
    let resident = families::resident_blocks(&backend, kernels::histogram::THREADS);
    let problem = kernels::histogram::Histogram::new(input.len(), resident).map_err(size_error)?;
    let kernel =
        &kernels::histogram::FAMILY.kernels[variant::resolve(Op::Histogram, &backend, variant, [input.len(), 1, 1])?];
    let (input, mut bins) = (array(&backend, &input)?, array(&backend, &bins)?);
    families::histogram::launch(&backend, kernel, Source::Rust, &problem, &input, &mut bins).map_err(to_python)
}

/// The counts of the f32 of `input` (any shape) in 256 equal bins over [lo, hi), added into
/// `bins` (256 int32, zero before the call); values outside the range, NaN included, not counted.
#[pyfunction]
#[pyo3(signature = (input, bins, lo, hi, *, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn histogram_f32(
    input: &Bound<PyAny>,
    bins: &Bound<PyAny>,
    lo: f32,
    hi: f32,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 0)?;
    let bins = Tensor::read("bins", bins, Dtype::U32, 1)?.writable()?;
    bins.expect_shape(&[kernels::histogram_f32::BINS as usize])?;
    let backend = backend(device, stream)?;
    let resident = families::resident_blocks(&backend, kernels::histogram_f32::THREADS);
    let problem = kernels::histogram_f32::HistogramF32::new(input.len(), resident).map_err(size_error)?;
    let kernel = &kernels::histogram_f32::FAMILY.kernels
        [variant::resolve(Op::HistogramF32, &backend, variant, [input.len(), 1, 1])?];
    let (input, mut bins) = (array(&backend, &input)?, array(&backend, &bins)?);
    families::histogram_f32::launch(&backend, kernel, Source::Rust, &problem, (&input, (lo, hi)), &mut bins)
        .map_err(to_python)
}

/// The row reduction of a rows × cols matrix on `device`.
fn row_problem(backend: &Backend, rows: usize, cols: usize) -> PyResult<kernels::rows::RowReduce> {
    let blocks = families::resident_blocks(backend, kernels::reduce::THREADS);
    kernels::rows::RowReduce::new(rows, cols, blocks).map_err(size_error)
}

/// Elements of `row_sum`'s and `row_max`'s scratch for rows × cols on `device`: the pieces'
/// results (float32) and the rows' tickets (32-bit, zero, and left at zero by every call).
#[pyfunction]
#[pyo3(signature = (rows, cols, *, device))]
fn row_reduce_scratch_len(rows: usize, cols: usize, device: usize) -> PyResult<(usize, usize)> {
    let problem = row_problem(&backend(device, 0)?, rows, cols)?;
    Ok((problem.partials_len(), problem.tickets_len()))
}

/// The sum (`row_sum`) or the maximum (`row_max`) of each row of a rows × cols f32 matrix into
/// `output` (rows), with the scratch of [`row_reduce_scratch_len`] (or longer).
fn row_reduce(
    op: Op,
    family: &'static ptxkit::Family<kernels::rows::RowReduce>,
    [input, output, partials, tickets]: [&Bound<PyAny>; 4],
    (stream, device): (usize, usize),
    variant: &str,
) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let output = Tensor::read("output", output, Dtype::F32, 1)?.writable()?;
    let partials = Tensor::read("partials", partials, Dtype::F32, 1)?.writable()?;
    let tickets = Tensor::read("tickets", tickets, Dtype::U32, 1)?.writable()?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    output.expect_shape(&[rows])?;
    let backend = backend(device, stream)?;
    let problem = row_problem(&backend, rows, cols)?;
    let kernel = &family.kernels[variant::resolve(op, &backend, variant, [rows, cols, 1])?];
    let (input, mut output) = (array(&backend, &input)?, array(&backend, &output)?);
    let mut scratch = families::rows::Scratch {
        partials: array(&backend, &partials)?,
        tickets: array::<u32>(&backend, &tickets)?,
    };
    families::rows::launch(
        &backend,
        kernel,
        Source::Rust,
        &problem,
        &input,
        &mut output,
        &mut scratch,
    )
    .map_err(to_python)
}

/// `output[r]` = the sum of row r of a rows × cols f32 matrix.
#[pyfunction]
#[pyo3(signature = (input, output, partials, tickets, *, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn row_sum(
    input: &Bound<PyAny>,
    output: &Bound<PyAny>,
    partials: &Bound<PyAny>,
    tickets: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    row_reduce(
        Op::RowSum,
        &kernels::rows::SUM_FAMILY,
        [input, output, partials, tickets],
        (stream, device),
        variant,
    )
}

/// `output[r]` = the maximum of row r of a rows × cols f32 matrix.
#[pyfunction]
#[pyo3(signature = (input, output, partials, tickets, *, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn row_max(
    input: &Bound<PyAny>,
    output: &Bound<PyAny>,
    partials: &Bound<PyAny>,
    tickets: &Bound<PyAny>,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    row_reduce(
        Op::RowMax,
        &kernels::rows::MAX_FAMILY,
        [input, output, partials, tickets],
        (stream, device),
        variant,
    )
}

/// Where each scratch array of `cumsum` for `n` elements starts in its one scratch tensor, in
/// floats (each on the extension's alignment), and the tensor's length.
fn cumsum_levels(n: usize) -> PyResult<(Vec<(usize, usize)>, usize)> {
    let n = kernels::scan::Scan::<f32>::new(n, false).map_err(size_error)?.n;
    let align = ptxkit_runtime::EXTERNAL_ALIGNMENT as usize / size_of::<f32>();
    let mut at = 0;
    let levels = families::scan::levels_for(n)
        .into_iter()
        .map(|len| {
            let level = (at, len);
            at += len.next_multiple_of(align);
            level
        })
        .collect();
    Ok((levels, at))
}

/// Floats of the one scratch tensor `cumsum` needs for `n` elements (the same for every variant).
#[pyfunction]
fn cumsum_scratch_len(n: usize) -> PyResult<usize> {
    Ok(cumsum_levels(n)?.1)
}

/// The inclusive (or exclusive) prefix sums of the n f32 of `input` into `output` (the same
/// shape), with one f32 scratch tensor of [`cumsum_scratch_len`] elements (cut into the levels'
/// arrays here: one allocation a call).
#[pyfunction]
#[pyo3(signature = (input, output, scratch, *, stream, device, exclusive = false, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn cumsum(
    input: &Bound<PyAny>,
    output: &Bound<PyAny>,
    scratch: &Bound<PyAny>,
    stream: usize,
    device: usize,
    exclusive: bool,
    variant: &str,
) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 0)?;
    let output = Tensor::read("output", output, Dtype::F32, 0)?.writable()?;
    output.expect_shape(&input.shape)?;
    let scratch = Tensor::read("scratch", scratch, Dtype::F32, 1)?.writable()?;
    let (levels, needed) = cumsum_levels(input.len())?;
    scratch.expect_shape(&[needed])?;
    let problem = kernels::scan::Scan::new(input.len(), exclusive).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = &kernels::scan::FAMILY.kernels[variant::resolve(Op::Cumsum, &backend, variant, [input.len(), 1, 1])?];
    let (input, mut output) = (array(&backend, &input)?, array(&backend, &output)?);
    let mut levels = levels
        .iter()
        .map(|&(at, len)| array(&backend, &scratch.part(at, len, size_of::<f32>())?))
        .collect::<PyResult<Vec<_>>>()?;
    families::scan::scan(
        &backend,
        kernel,
        Source::Rust,
        &problem,
        &input,
        &mut output,
        &mut levels,
    )
    .map_err(to_python)
}

/// A `cols`-element f32 vector argument (a weight, a bias, a gradient of one), where given.
fn optional_vector(
    name: &'static str,
    object: Option<&Bound<PyAny>>,
    cols: usize,
    written: bool,
) -> PyResult<Option<Tensor>> {
    object
        .map(|object| -> PyResult<Tensor> {
            let tensor = Tensor::read(name, object, Dtype::F32, 1)?;
            tensor.expect_shape(&[cols])?;
            if written { tensor.writable() } else { Ok(tensor) }
        })
        .transpose()
}

/// Layer norm (`op` LayerNorm: mean and rstd) or RMS norm (rstd only) of each row of a rows × cols
/// f32 matrix.
#[allow(clippy::too_many_arguments)]
fn norm_forward(
    op: Op,
    family: &'static ptxkit::Family<kernels::norm::RowNorm>,
    (input, weight, bias): (&Bound<PyAny>, Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    (output, mean, rstd): (&Bound<PyAny>, Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    eps: f32,
    (stream, device): (usize, usize),
    variant: &str,
) -> PyResult<()> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    let output = Tensor::read("output", output, Dtype::F32, 2)?.writable()?;
    output.expect_shape(&[rows, cols])?;
    let weight = optional_vector("weight", weight, cols, false)?;
    let bias = optional_vector("bias", bias, cols, false)?;
    let mean = optional_vector("mean", mean, rows, true)?;
    let rstd = optional_vector("rstd", rstd, rows, true)?;
    if !eps.is_finite() || eps < 0.0 {
        return Err(PyValueError::new_err(format!("eps={eps}: give a finite number ≥ 0")));
    }
    let problem = kernels::norm::RowNorm::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let kernel = &family.kernels[variant::resolve(op, &backend, variant, [rows, cols, 1])?];
    let (input, mut output) = (array(&backend, &input)?, array(&backend, &output)?);
    let optional = |t: Option<Tensor>| t.map(|t| array(&backend, &t)).transpose();
    let (weight, bias) = (optional(weight)?, optional(bias)?);
    let (mut mean, mut rstd) = (optional(mean)?, optional(rstd)?);
    let arrays = families::norm::Arrays {
        input: &input,
        weight: weight.as_ref(),
        bias: bias.as_ref(),
        output: &mut output,
        mean: mean.as_mut(),
        rstd: rstd.as_mut(),
    };
    families::norm::launch(&backend, kernel, Source::Rust, &problem, eps, arrays).map_err(to_python)
}

/// Layer norm of each row of a rows × cols f32 matrix: `output = (input − mean)·rstd·weight + bias`
/// (weight and bias of cols elements, or None), each row's mean and rstd into `mean` and `rstd`
/// (rows each, or None).
#[pyfunction]
#[pyo3(signature = (input, weight, bias, output, mean, rstd, *, eps, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn layer_norm(
    input: &Bound<PyAny>,
    weight: Option<&Bound<PyAny>>,
    bias: Option<&Bound<PyAny>>,
    output: &Bound<PyAny>,
    mean: Option<&Bound<PyAny>>,
    rstd: Option<&Bound<PyAny>>,
    eps: f32,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    norm_forward(
        Op::LayerNorm,
        &kernels::norm::LAYER_NORM_FAMILY,
        (input, weight, bias),
        (output, mean, rstd),
        eps,
        (stream, device),
        variant,
    )
}

/// RMS norm of each row of a rows × cols f32 matrix: `output = input·rstd·weight` (weight of cols
/// elements, or None), each row's rstd into `rstd` (rows, or None).
#[pyfunction]
#[pyo3(signature = (input, weight, output, rstd, *, eps, stream, device, variant = "auto"))]
#[allow(clippy::too_many_arguments)]
fn rms_norm(
    input: &Bound<PyAny>,
    weight: Option<&Bound<PyAny>>,
    output: &Bound<PyAny>,
    rstd: Option<&Bound<PyAny>>,
    eps: f32,
    stream: usize,
    device: usize,
    variant: &str,
) -> PyResult<()> {
    norm_forward(
        Op::RmsNorm,
        &kernels::norm::RMS_NORM_FAMILY,
        (input, weight, None),
        (output, None, rstd),
        eps,
        (stream, device),
        variant,
    )
}

/// A norm gradient's inputs, checked: x and dy (rows × cols f32), the forward pass's mean (rows,
/// or None: RMS norm) and rstd (rows); with [rows, cols].
type GradientInputs = (Tensor, Tensor, Option<Tensor>, Tensor, [usize; 2]);

fn gradient_inputs(
    input: &Bound<PyAny>,
    grad_output: &Bound<PyAny>,
    mean: Option<&Bound<PyAny>>,
    rstd: &Bound<PyAny>,
) -> PyResult<GradientInputs> {
    let input = Tensor::read("input", input, Dtype::F32, 2)?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    let grad_output = Tensor::read("grad_output", grad_output, Dtype::F32, 2)?;
    grad_output.expect_shape(&[rows, cols])?;
    let mean = optional_vector("mean", mean, rows, false)?;
    let rstd = Tensor::read("rstd", rstd, Dtype::F32, 1)?;
    rstd.expect_shape(&[rows])?;
    Ok((input, grad_output, mean, rstd, [rows, cols]))
}

/// The input's gradient of layer norm (`mean` given) or RMS norm (`mean` None) of a rows × cols f32
/// matrix into `grad_input`, from the forward pass's statistics (rows each) and weight (cols, or
/// None).
#[pyfunction]
#[pyo3(signature = (input, grad_output, weight, mean, rstd, grad_input, *, stream, device))]
#[allow(clippy::too_many_arguments)]
fn norm_backward(
    input: &Bound<PyAny>,
    grad_output: &Bound<PyAny>,
    weight: Option<&Bound<PyAny>>,
    mean: Option<&Bound<PyAny>>,
    rstd: &Bound<PyAny>,
    grad_input: &Bound<PyAny>,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    let (input, grad_output, mean, rstd, [rows, cols]) = gradient_inputs(input, grad_output, mean, rstd)?;
    let grad_input = Tensor::read("grad_input", grad_input, Dtype::F32, 2)?.writable()?;
    grad_input.expect_shape(&[rows, cols])?;
    let weight = optional_vector("weight", weight, cols, false)?;
    let problem = kernels::norm::RowNormBackward::new(rows, cols).map_err(size_error)?;
    let family = if mean.is_some() {
        &kernels::norm::LAYER_NORM_BACKWARD_FAMILY
    } else {
        &kernels::norm::RMS_NORM_BACKWARD_FAMILY
    };
    let backend = backend(device, stream)?;
    let (input, grad_output, rstd) = (
        array(&backend, &input)?,
        array(&backend, &grad_output)?,
        array(&backend, &rstd)?,
    );
    let optional = |t: Option<Tensor>| t.map(|t| array(&backend, &t)).transpose();
    let (weight, mean) = (optional(weight)?, optional(mean)?);
    let mut grad_input = array(&backend, &grad_input)?;
    let arrays = families::norm_backward::BackwardArrays {
        input: &input,
        grad_output: &grad_output,
        weight: weight.as_ref(),
        mean: mean.as_ref(),
        rstd: &rstd,
        grad_input: &mut grad_input,
    };
    families::norm_backward::launch_backward(&backend, &family.kernels[0], Source::Rust, &problem, arrays)
        .map_err(to_python)
}

/// The weight's gradient (and the bias's, where `dbias` is given) of layer norm (`mean` given) or
/// RMS norm (`mean` None) of a rows × cols f32 matrix: sums down the columns into `dweight` and
/// `dbias` (cols each).
#[pyfunction]
#[pyo3(signature = (input, grad_output, mean, rstd, dweight, dbias, *, stream, device))]
#[allow(clippy::too_many_arguments)]
fn norm_weight_grad(
    input: &Bound<PyAny>,
    grad_output: &Bound<PyAny>,
    mean: Option<&Bound<PyAny>>,
    rstd: &Bound<PyAny>,
    dweight: &Bound<PyAny>,
    dbias: Option<&Bound<PyAny>>,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    let (input, grad_output, mean, rstd, [rows, cols]) = gradient_inputs(input, grad_output, mean, rstd)?;
    let dweight = Tensor::read("dweight", dweight, Dtype::F32, 1)?.writable()?;
    dweight.expect_shape(&[cols])?;
    let dbias = optional_vector("dbias", dbias, cols, true)?;
    let problem = kernels::norm::NormWeightGrad::new(rows, cols).map_err(size_error)?;
    let family = if mean.is_some() {
        &kernels::norm::LAYER_NORM_WEIGHT_GRAD_FAMILY
    } else {
        &kernels::norm::RMS_NORM_WEIGHT_GRAD_FAMILY
    };
    let backend = backend(device, stream)?;
    let (input, grad_output, rstd) = (
        array(&backend, &input)?,
        array(&backend, &grad_output)?,
        array(&backend, &rstd)?,
    );
    let mean = mean.map(|t| array(&backend, &t)).transpose()?;
    let mut dweight = array(&backend, &dweight)?;
    let mut dbias = dbias.map(|t| array(&backend, &t)).transpose()?;
    let arrays = families::norm_backward::WeightGradArrays {
        input: &input,
        grad_output: &grad_output,
        mean: mean.as_ref(),
        rstd: &rstd,
        dweight: &mut dweight,
        dbias: dbias.as_mut(),
    };
    families::norm_backward::launch_weight_grad(&backend, &family.kernels[0], Source::Rust, &problem, arrays)
        .map_err(to_python)
}

/// Elements of the partial sums `norm_backward_fused` needs for rows × cols.
#[pyfunction]
fn norm_partials_len(rows: usize, cols: usize) -> PyResult<usize> {
    Ok(kernels::norm::backward_fused::NormBackwardFused::new(rows, cols)
        .map_err(size_error)?
        .partials_len())
}

/// All three gradients of layer norm (`mean` given) or RMS norm (`mean` None) of a rows × cols f32
/// matrix (cols at most 8192) from one read of x and dy: dx into `grad_input`, the weight's into
/// `dweight` and, where given, the bias's into `dbias`, through `partials`
/// ([`norm_partials_len`] elements of scratch).
#[pyfunction]
#[pyo3(signature = (input, grad_output, weight, mean, rstd, grad_input, partials, dweight, dbias, *, stream, device))]
#[allow(clippy::too_many_arguments)]
fn norm_backward_fused(
    input: &Bound<PyAny>,
    grad_output: &Bound<PyAny>,
    weight: Option<&Bound<PyAny>>,
    mean: Option<&Bound<PyAny>>,
    rstd: &Bound<PyAny>,
    grad_input: &Bound<PyAny>,
    partials: &Bound<PyAny>,
    dweight: &Bound<PyAny>,
    dbias: Option<&Bound<PyAny>>,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::norm::backward_fused::{LAYER_FAMILY, NormBackwardFused, RMS_FAMILY};
    let (input, grad_output, mean, rstd, [rows, cols]) = gradient_inputs(input, grad_output, mean, rstd)?;
    let problem = NormBackwardFused::new(rows, cols).map_err(size_error)?;
    let grad_input = Tensor::read("grad_input", grad_input, Dtype::F32, 2)?.writable()?;
    grad_input.expect_shape(&[rows, cols])?;
    let weight = optional_vector("weight", weight, cols, false)?;
    let partials = Tensor::read("partials", partials, Dtype::F32, 1)?.writable()?;
    partials.expect_shape(&[problem.partials_len()])?;
    let dweight = Tensor::read("dweight", dweight, Dtype::F32, 1)?.writable()?;
    dweight.expect_shape(&[cols])?;
    let dbias = optional_vector("dbias", dbias, cols, true)?;
    let family = if mean.is_some() { &LAYER_FAMILY } else { &RMS_FAMILY };
    let backend = backend(device, stream)?;
    let (input, grad_output, rstd) = (
        array(&backend, &input)?,
        array(&backend, &grad_output)?,
        array(&backend, &rstd)?,
    );
    let optional = |t: Option<Tensor>| t.map(|t| array(&backend, &t)).transpose();
    let (weight, mean, mut dbias) = (optional(weight)?, optional(mean)?, optional(dbias)?);
    let (mut grad_input, mut partials) = (array(&backend, &grad_input)?, array(&backend, &partials)?);
    let mut dweight = array(&backend, &dweight)?;
    let arrays = families::norm_backward_fused::FusedArrays {
        gradient: families::norm_backward::BackwardArrays {
            input: &input,
            grad_output: &grad_output,
            weight: weight.as_ref(),
            mean: mean.as_ref(),
            rstd: &rstd,
            grad_input: &mut grad_input,
        },
        partials: &mut partials,
    };
    families::norm_backward_fused::launch_gradients(
        &backend,
        &family.kernels[0],
        Source::Rust,
        &problem,
        arrays,
        (&mut dweight, dbias.as_mut()),
    )
    .map_err(to_python)
}

/// The residual norm of element `E` (f32, or bf16 as its bits) with its arrays read as `dtype`.
#[allow(clippy::too_many_arguments)]
fn norm_residual_of<E: families::element::HostElement>(
    family: &'static ptxkit::Family<kernels::norm::residual::ResidualNorm<E>>,
    dtype: Dtype,
    (input, residual, sum): (&Bound<PyAny>, Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    (weight, bias): (Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    (output, mean, rstd): (&Bound<PyAny>, Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    eps: f32,
    (stream, device): (usize, usize),
) -> PyResult<()>
where
    E::Bits: ptxkit_runtime::array::Element,
{
    let input = Tensor::read("input", input, dtype, 2)?;
    let [rows, cols] = [input.shape[0], input.shape[1]];
    let output = Tensor::read("output", output, dtype, 2)?.writable()?;
    output.expect_shape(&[rows, cols])?;
    let matrix = |name: &'static str, object: &Bound<PyAny>, written: bool| -> PyResult<Tensor> {
        let tensor = Tensor::read(name, object, dtype, 2)?;
        tensor.expect_shape(&[rows, cols])?;
        if written { tensor.writable() } else { Ok(tensor) }
    };
    let residual = match (residual, sum) {
        (Some(residual), Some(sum)) => Some((matrix("residual", residual, false)?, matrix("sum", sum, true)?)),
        (None, None) => None,
        _ => {
            return Err(PyValueError::new_err(
                "residual and sum: give both (the sum is written) or neither",
            ));
        }
    };
    let vector = |name: &'static str, object: Option<&Bound<PyAny>>| -> PyResult<Option<Tensor>> {
        object
            .map(|object| {
                let tensor = Tensor::read(name, object, dtype, 1)?;
                tensor.expect_shape(&[cols])?;
                Ok(tensor)
            })
            .transpose()
    };
    let (weight, bias) = (vector("weight", weight)?, vector("bias", bias)?);
    let mean = optional_vector("mean", mean, rows, true)?;
    let rstd = optional_vector("rstd", rstd, rows, true)?;
    if !eps.is_finite() || eps < 0.0 {
        return Err(PyValueError::new_err(format!("eps={eps}: give a finite number ≥ 0")));
    }
    let problem = kernels::norm::residual::ResidualNorm::<E>::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (input, mut output) = (
        array::<E::Bits>(&backend, &input)?,
        array::<E::Bits>(&backend, &output)?,
    );
    let mut residual = residual
        .map(|(r, s)| -> PyResult<_> { Ok((array::<E::Bits>(&backend, &r)?, array::<E::Bits>(&backend, &s)?)) })
        .transpose()?;
    let elements = |t: Option<Tensor>| t.map(|t| array::<E::Bits>(&backend, &t)).transpose();
    let (weight, bias) = (elements(weight)?, elements(bias)?);
    let statistics = |t: Option<Tensor>| t.map(|t| array::<f32>(&backend, &t)).transpose();
    let (mut mean, mut rstd) = (statistics(mean)?, statistics(rstd)?);
    let arrays = families::norm_residual::Arrays {
        input: &input,
        residual: residual.as_mut().map(|(r, s)| (&*r, s)),
        weight: weight.as_ref(),
        bias: bias.as_ref(),
        output: &mut output,
        mean: mean.as_mut(),
        rstd: rstd.as_mut(),
    };
    families::norm_residual::launch(&backend, &family.kernels[0], Source::Rust, &problem, eps, arrays)
        .map_err(to_python)
}

/// Layer norm (`centered`) or RMS norm of each row of `input + residual` (rows × cols, float32 or
/// bfloat16 as `bf16` says), the sum written to `sum`: `residual` and `sum` both given or both
/// None (the norm of `input` alone); weight and bias (cols, the same type) or None; each row's
/// mean and rstd (f32, rows) or None.
#[pyfunction]
#[pyo3(signature = (input, residual, sum, weight, bias, output, mean, rstd, *, centered, bf16, eps, stream, device))]
#[allow(clippy::too_many_arguments)]
fn norm_residual(
    input: &Bound<PyAny>,
    residual: Option<&Bound<PyAny>>,
    sum: Option<&Bound<PyAny>>,
    weight: Option<&Bound<PyAny>>,
    bias: Option<&Bound<PyAny>>,
    output: &Bound<PyAny>,
    mean: Option<&Bound<PyAny>>,
    rstd: Option<&Bound<PyAny>>,
    centered: bool,
    bf16: bool,
    eps: f32,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::norm::residual::{LAYER_BF16_FAMILY, LAYER_FAMILY, RMS_BF16_FAMILY, RMS_FAMILY};
    let matrices = (input, residual, sum);
    let affine = (weight, bias);
    let outputs = (output, mean, rstd);
    let launch = (stream, device);
    match (bf16, centered) {
        (false, true) => norm_residual_of(&LAYER_FAMILY, Dtype::F32, matrices, affine, outputs, eps, launch),
        (false, false) => norm_residual_of(&RMS_FAMILY, Dtype::F32, matrices, affine, outputs, eps, launch),
        (true, true) => norm_residual_of(&LAYER_BF16_FAMILY, Dtype::Bf16, matrices, affine, outputs, eps, launch),
        (true, false) => norm_residual_of(&RMS_BF16_FAMILY, Dtype::Bf16, matrices, affine, outputs, eps, launch),
    }
}

/// `reduction=` as the forward kernel takes it: `None` for "none".
fn reduction(name: &str) -> PyResult<Option<kernels::cross_entropy::Reduction>> {
    use kernels::cross_entropy::Reduction;
    match name {
        "mean" => Ok(Some(Reduction::Mean)),
        "sum" => Ok(Some(Reduction::Sum)),
        "none" => Ok(None),
        _ => Err(PyValueError::new_err(format!(
            "reduction={name:?}: choose \"mean\", \"sum\" or \"none\", as torch.nn.functional.cross_entropy"
        ))),
    }
}

/// Softmax cross-entropy of each row of rows × cols f32 `logits` against the int64 `targets`
/// (rows): each row's loss into `losses` (rows) and its maximum and ln Σ e^(x − maximum) into
/// `stats` (rows × 2, what the backward pass reads); for `reduction` "mean" or
/// "sum", the reduced loss and the rows counted into `total` (2), with `ticket` one zeroed 32-bit
/// integer (left zeroed); for "none" both may be None. Rows whose target is `ignore_index` are left
/// out.
#[pyfunction]
#[pyo3(signature = (logits, targets, losses, stats, total, ticket, *, ignore_index, reduction, bf16=false, stream, device))]
#[allow(clippy::too_many_arguments)]
fn cross_entropy(
    logits: &Bound<PyAny>,
    targets: &Bound<PyAny>,
    losses: &Bound<PyAny>,
    stats: &Bound<PyAny>,
    total: Option<&Bound<PyAny>>,
    ticket: Option<&Bound<PyAny>>,
    ignore_index: i64,
    reduction: &str,
    bf16: bool,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::cross_entropy::{BF16_FAMILY, FAMILY};
    let tensors = (logits, targets, losses, stats);
    let reduced = (reduction, total, ticket);
    if bf16 {
        cross_entropy_of(
            &BF16_FAMILY,
            Dtype::Bf16,
            tensors,
            reduced,
            ignore_index,
            (stream, device),
        )
    } else {
        cross_entropy_of(&FAMILY, Dtype::F32, tensors, reduced, ignore_index, (stream, device))
    }
}

/// [`cross_entropy`] over logits of `E` (f32, or bf16 as its bits) read as `dtype`.
#[allow(clippy::type_complexity)]
fn cross_entropy_of<E: families::element::HostElement>(
    family: &'static ptxkit::Family<kernels::cross_entropy::CrossEntropy<E>>,
    dtype: Dtype,
    (logits, targets, losses, stats): (&Bound<PyAny>, &Bound<PyAny>, &Bound<PyAny>, &Bound<PyAny>),
    (reduction, total, ticket): (&str, Option<&Bound<PyAny>>, Option<&Bound<PyAny>>),
    ignore_index: i64,
    (stream, device): (usize, usize),
) -> PyResult<()> {
    let reduction = self::reduction(reduction)?;
    let [logits, targets, losses, stats] = forward_tensors(dtype, logits, targets, losses, stats)?;
    let [rows, cols] = [logits.shape[0], logits.shape[1]];
    let reduced = reduced_outputs(reduction, total, ticket)?;
    let problem = kernels::cross_entropy::CrossEntropy::<E>::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (logits, targets) = (array::<E::Bits>(&backend, &logits)?, array(&backend, &targets)?);
    let (mut losses, mut stats) = (array(&backend, &losses)?, array(&backend, &stats)?);
    let mut reduced = reduced
        .map(|(reduction, total, ticket)| -> PyResult<_> {
            Ok((reduction, array(&backend, &total)?, array::<u32>(&backend, &ticket)?))
        })
        .transpose()?;
    let arrays = families::cross_entropy::ForwardArrays {
        logits: &logits,
        targets: &targets,
        losses: &mut losses,
        stats: &mut stats,
        total: reduced
            .as_mut()
            .map(|(reduction, total, ticket)| families::cross_entropy::Total {
                total,
                ticket,
                reduction: *reduction,
            }),
    };
    families::cross_entropy::launch_forward(
        &backend,
        &family.kernels[0],
        Source::Rust,
        &problem,
        ignore_index,
        arrays,
    )
    .map_err(to_python)
}

/// Training's forward pass in one read of the logits: as [`cross_entropy`], and the logits'
/// gradient for a loss gradient of 1 into `grad_logits` (rows × cols); a mean first counts its rows
/// into `count` (1 float32 element), which divides the gradient. `cross_entropy_scale` then
/// applies the loss gradient. `pipelined`: the kernel whose blocks take rows a grid apart, each
/// row's loads issued while the one before is written (`kernels::cross_entropy::pipelined`).
#[pyfunction]
#[pyo3(signature = (logits, targets, losses, stats, total, ticket, count, grad_logits, *, ignore_index, reduction, bf16=false, pipelined=false, stream, device))]
#[allow(clippy::too_many_arguments)]
fn cross_entropy_fused(
    logits: &Bound<PyAny>,
    targets: &Bound<PyAny>,
    losses: &Bound<PyAny>,
    stats: &Bound<PyAny>,
    total: Option<&Bound<PyAny>>,
    ticket: Option<&Bound<PyAny>>,
    count: Option<&Bound<PyAny>>,
    grad_logits: &Bound<PyAny>,
    ignore_index: i64,
    reduction: &str,
    bf16: bool,
    pipelined: bool,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::cross_entropy::{fused, pipelined as overlapped};
    let tensors = (logits, targets, losses, stats, grad_logits);
    let reduced = (reduction, total, ticket, count);
    if bf16 {
        cross_entropy_fused_of(
            if pipelined {
                &overlapped::KERNEL_BF16
            } else {
                &fused::KERNEL_BF16
            },
            Dtype::Bf16,
            tensors,
            reduced,
            ignore_index,
            (stream, device),
        )
    } else {
        cross_entropy_fused_of(
            if pipelined { &overlapped::KERNEL } else { &fused::KERNEL },
            Dtype::F32,
            tensors,
            reduced,
            ignore_index,
            (stream, device),
        )
    }
}

/// [`cross_entropy_fused`] over logits and a gradient of `E` read as `dtype`.
#[allow(clippy::type_complexity)]
fn cross_entropy_fused_of<E: families::element::HostElement>(
    kernel: &ptxkit::Kernel<kernels::cross_entropy::CrossEntropyFused<E>>,
    dtype: Dtype,
    (logits, targets, losses, stats, grad_logits): (
        &Bound<PyAny>,
        &Bound<PyAny>,
        &Bound<PyAny>,
        &Bound<PyAny>,
        &Bound<PyAny>,
    ),
    (reduction, total, ticket, count): (
        &str,
        Option<&Bound<PyAny>>,
        Option<&Bound<PyAny>>,
        Option<&Bound<PyAny>>,
    ),
    ignore_index: i64,
    (stream, device): (usize, usize),
) -> PyResult<()> {
    use kernels::cross_entropy::{COUNT_FAMILY, CrossEntropyCount, CrossEntropyFused, Reduction};
    let reduction = self::reduction(reduction)?;
    let [logits, targets, losses, stats] = forward_tensors(dtype, logits, targets, losses, stats)?;
    let [rows, cols] = [logits.shape[0], logits.shape[1]];
    let grad_logits = Tensor::read("grad_logits", grad_logits, dtype, 2)?.writable()?;
    grad_logits.expect_shape(&[rows, cols])?;
    let reduced = reduced_outputs(reduction, total, ticket)?;
    let count = match (reduction, count) {
        (Some(Reduction::Mean), Some(count)) => {
            let count = Tensor::read("count", count, Dtype::F32, 1)?.writable()?;
            count.expect_shape(&[1])?;
            Some(count)
        }
        (Some(Reduction::Mean), None) => {
            return Err(PyValueError::new_err(
                "count: a mean's gradient is divided by the rows it counts; give a float32 tensor of 1 element",
            ));
        }
        _ => None,
    };
    let problem = CrossEntropyFused::<E>::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (logits, targets) = (array::<E::Bits>(&backend, &logits)?, array::<i64>(&backend, &targets)?);
    let (mut losses, mut stats) = (array::<f32>(&backend, &losses)?, array::<f32>(&backend, &stats)?);
    let mut grad_logits = array::<E::Bits>(&backend, &grad_logits)?;
    let mut count = count.map(|count| array::<f32>(&backend, &count)).transpose()?;
    if let Some(count) = count.as_mut() {
        let problem = CrossEntropyCount::new(rows).map_err(size_error)?;
        families::cross_entropy_fused::launch_count(
            &backend,
            &COUNT_FAMILY.kernels[0],
            Source::Rust,
            &problem,
            ignore_index,
            (&targets, count),
        )
        .map_err(to_python)?;
    }
    let mut reduced = reduced
        .map(|(reduction, total, ticket)| -> PyResult<_> {
            Ok((reduction, array(&backend, &total)?, array::<u32>(&backend, &ticket)?))
        })
        .transpose()?;
    let arrays = families::cross_entropy_fused::FusedArrays {
        logits: &logits,
        targets: &targets,
        count: count.as_ref(),
        losses: &mut losses,
        stats: &mut stats,
        total: reduced
            .as_mut()
            .map(|(reduction, total, ticket)| families::cross_entropy::Total {
                total,
                ticket,
                reduction: *reduction,
            }),
        grad_logits: &mut grad_logits,
    };
    families::cross_entropy_fused::launch_fused(&backend, kernel, Source::Rust, &problem, ignore_index, arrays)
        .map_err(to_python)
}

/// `cross_entropy_fused`'s gradient (rows × cols, in place) times `grad_loss` (1 element, or one
/// per row); rows whose loss gradient is 1 or whose target is `ignore_index` are not touched.
#[pyfunction]
#[pyo3(signature = (targets, grad_loss, grad_logits, *, ignore_index, bf16=false, stream, device))]
fn cross_entropy_scale(
    targets: &Bound<PyAny>,
    grad_loss: &Bound<PyAny>,
    grad_logits: &Bound<PyAny>,
    ignore_index: i64,
    bf16: bool,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::cross_entropy::{SCALE_BF16_FAMILY, SCALE_FAMILY};
    let tensors = (targets, grad_loss, grad_logits);
    if bf16 {
        cross_entropy_scale_of(&SCALE_BF16_FAMILY, Dtype::Bf16, tensors, ignore_index, (stream, device))
    } else {
        cross_entropy_scale_of(&SCALE_FAMILY, Dtype::F32, tensors, ignore_index, (stream, device))
    }
}

/// [`cross_entropy_scale`] over a gradient of `E` read as `dtype`.
fn cross_entropy_scale_of<E: families::element::HostElement>(
    family: &'static ptxkit::Family<kernels::cross_entropy::CrossEntropyScale<E>>,
    dtype: Dtype,
    (targets, grad_loss, grad_logits): (&Bound<PyAny>, &Bound<PyAny>, &Bound<PyAny>),
    ignore_index: i64,
    (stream, device): (usize, usize),
) -> PyResult<()> {
    let grad_logits = Tensor::read("grad_logits", grad_logits, dtype, 2)?.writable()?;
    let [rows, cols] = [grad_logits.shape[0], grad_logits.shape[1]];
    let targets = Tensor::read("targets", targets, Dtype::I64, 1)?;
    targets.expect_shape(&[rows])?;
    let grad_loss = Tensor::read("grad_loss", grad_loss, Dtype::F32, 0)?;
    if grad_loss.len() != 1 {
        grad_loss.expect_shape(&[rows])?;
    }
    let problem = kernels::cross_entropy::CrossEntropyScale::<E>::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (targets, grad_loss) = (array::<i64>(&backend, &targets)?, array::<f32>(&backend, &grad_loss)?);
    let mut grad_logits = array::<E::Bits>(&backend, &grad_logits)?;
    families::cross_entropy_fused::launch_scale(
        &backend,
        &family.kernels[0],
        Source::Rust,
        &problem,
        ignore_index,
        (&targets, &grad_loss, &mut grad_logits),
    )
    .map_err(to_python)
}

/// The gradient of softmax cross-entropy with respect to rows × cols f32 `logits` into
/// `grad_logits`, from the int64 `targets` (rows) and the forward pass's `stats` (rows × 2): `grad_loss`
/// holds the loss's gradient (1 element, or one per row), `count` (1 element, or None) the rows a
/// mean counted. Rows whose target is `ignore_index` get 0.
#[pyfunction]
#[pyo3(signature = (logits, targets, stats, grad_loss, count, grad_logits, *, ignore_index, bf16=false, stream, device))]
#[allow(clippy::too_many_arguments)]
fn cross_entropy_backward(
    logits: &Bound<PyAny>,
    targets: &Bound<PyAny>,
    stats: &Bound<PyAny>,
    grad_loss: &Bound<PyAny>,
    count: Option<&Bound<PyAny>>,
    grad_logits: &Bound<PyAny>,
    ignore_index: i64,
    bf16: bool,
    stream: usize,
    device: usize,
) -> PyResult<()> {
    use kernels::cross_entropy::{BACKWARD_BF16_FAMILY, BACKWARD_FAMILY};
    let tensors = (logits, targets, stats, grad_loss, count, grad_logits);
    if bf16 {
        cross_entropy_backward_of(
            &BACKWARD_BF16_FAMILY,
            Dtype::Bf16,
            tensors,
            ignore_index,
            (stream, device),
        )
    } else {
        cross_entropy_backward_of(&BACKWARD_FAMILY, Dtype::F32, tensors, ignore_index, (stream, device))
    }
}

/// [`cross_entropy_backward`] over logits and a gradient of `E` read as `dtype`.
#[allow(clippy::type_complexity)]
fn cross_entropy_backward_of<E: families::element::HostElement>(
    family: &'static ptxkit::Family<kernels::cross_entropy::CrossEntropyBackward<E>>,
    dtype: Dtype,
    (logits, targets, stats, grad_loss, count, grad_logits): (
        &Bound<PyAny>,
        &Bound<PyAny>,
        &Bound<PyAny>,
        &Bound<PyAny>,
        Option<&Bound<PyAny>>,
        &Bound<PyAny>,
    ),
    ignore_index: i64,
    (stream, device): (usize, usize),
) -> PyResult<()> {
    let logits = Tensor::read("logits", logits, dtype, 2)?;
    let [rows, cols] = [logits.shape[0], logits.shape[1]];
    let targets = Tensor::read("targets", targets, Dtype::I64, 1)?;
    targets.expect_shape(&[rows])?;
    let stats = Tensor::read("stats", stats, Dtype::F32, 2)?;
    stats.expect_shape(&[rows, 2])?;
    let grad_loss = Tensor::read("grad_loss", grad_loss, Dtype::F32, 0)?;
    if grad_loss.len() != 1 {
        grad_loss.expect_shape(&[rows])?;
    }
    let count = count
        .map(|count| -> PyResult<Tensor> {
            let count = Tensor::read("count", count, Dtype::F32, 0)?;
            if count.len() != 1 {
                return Err(PyValueError::new_err(format!(
                    "count: shape {:?} given, one element expected",
                    count.shape
                )));
            }
            Ok(count)
        })
        .transpose()?;
    let grad_logits = Tensor::read("grad_logits", grad_logits, dtype, 2)?.writable()?;
    grad_logits.expect_shape(&[rows, cols])?;
    let problem = kernels::cross_entropy::CrossEntropyBackward::<E>::new(rows, cols).map_err(size_error)?;
    let backend = backend(device, stream)?;
    let (logits, targets) = (array::<E::Bits>(&backend, &logits)?, array::<i64>(&backend, &targets)?);
    let (stats, grad_loss) = (array::<f32>(&backend, &stats)?, array::<f32>(&backend, &grad_loss)?);
    let count = count.map(|count| array::<f32>(&backend, &count)).transpose()?;
    let mut grad_logits = array::<E::Bits>(&backend, &grad_logits)?;
    let arrays = families::cross_entropy::BackwardArrays {
        logits: &logits,
        targets: &targets,
        stats: &stats,
        grad_loss: &grad_loss,
        count: count.as_ref(),
        grad_logits: &mut grad_logits,
    };
    families::cross_entropy::launch_backward(
        &backend,
        &family.kernels[0],
        Source::Rust,
        &problem,
        ignore_index,
        arrays,
    )
    .map_err(to_python)
}

/// Cross-entropy's forward tensors: the rows × cols f32 logits, the rows' int64 targets, the
/// losses (rows) and statistics (rows × 2) written.
fn forward_tensors(
    dtype: Dtype,
    logits: &Bound<PyAny>,
    targets: &Bound<PyAny>,
    losses: &Bound<PyAny>,
    stats: &Bound<PyAny>,
) -> PyResult<[Tensor; 4]> {
    let logits = Tensor::read("logits", logits, dtype, 2)?;
    let rows = logits.shape[0];
    let targets = Tensor::read("targets", targets, Dtype::I64, 1)?;
    targets.expect_shape(&[rows])?;
    let losses = Tensor::read("losses", losses, Dtype::F32, 1)?.writable()?;
    losses.expect_shape(&[rows])?;
    let stats = Tensor::read("stats", stats, Dtype::F32, 2)?.writable()?;
    stats.expect_shape(&[rows, 2])?;
    Ok([logits, targets, losses, stats])
}

/// The cross-entropy total and its ticket where the reduction needs them.
fn reduced_outputs(
    reduction: Option<kernels::cross_entropy::Reduction>,
    total: Option<&Bound<PyAny>>,
    ticket: Option<&Bound<PyAny>>,
) -> PyResult<Option<(kernels::cross_entropy::Reduction, Tensor, Tensor)>> {
    match (reduction, total, ticket) {
        (None, _, _) => Ok(None),
        (Some(reduction), Some(total), Some(ticket)) => {
            let total = Tensor::read("total", total, Dtype::F32, 1)?.writable()?;
            total.expect_shape(&[2])?;
            let ticket = Tensor::read("ticket", ticket, Dtype::U32, 1)?.writable()?;
            ticket.expect_shape(&[1])?;
            Ok(Some((reduction, total, ticket)))
        }
        (Some(_), _, _) => Err(PyValueError::new_err(
            "total and ticket: a mean or a sum needs both (2 float32 and 1 zeroed int32 elements)",
        )),
    }
}

/// The kernels each operator can run, for `variant=`: the first is what `auto` means where the
/// family has no tile configurations.
#[pyfunction]
fn variants(op: &str) -> PyResult<Vec<&'static str>> {
    variant::names(op)
}

#[pymodule]
fn _native(module: &Bound<PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(transpose, module)?)?;
    module.add_function(wrap_pyfunction!(softmax, module)?)?;
    module.add_function(wrap_pyfunction!(matmul, module)?)?;
    module.add_function(wrap_pyfunction!(matmul_bf16, module)?)?;
    module.add_function(wrap_pyfunction!(matmul_bf16_rounded, module)?)?;
    module.add_function(wrap_pyfunction!(matmul_fp8, module)?)?;
    module.add_function(wrap_pyfunction!(quantize_fp8, module)?)?;
    module.add_function(wrap_pyfunction!(matmul_tf32, module)?)?;
    module.add_function(wrap_pyfunction!(histogram_f32, module)?)?;
    module.add_function(wrap_pyfunction!(row_reduce_scratch_len, module)?)?;
    module.add_function(wrap_pyfunction!(row_sum, module)?)?;
    module.add_function(wrap_pyfunction!(row_max, module)?)?;
    module.add_function(wrap_pyfunction!(attention, module)?)?;
    module.add_function(wrap_pyfunction!(attention_decode, module)?)?;
    module.add_function(wrap_pyfunction!(attention_backward, module)?)?;
    module.add_function(wrap_pyfunction!(attention_backward_stats_len, module)?)?;
    module.add_function(wrap_pyfunction!(attention_decode_partial_len, module)?)?;
    module.add_function(wrap_pyfunction!(histogram, module)?)?;
    module.add_function(wrap_pyfunction!(conv2d, module)?)?;
    module.add_function(wrap_pyfunction!(add, module)?)?;
    module.add_function(wrap_pyfunction!(shared_mem_add, module)?)?;
    module.add_function(wrap_pyfunction!(sum_scratch_len, module)?)?;
    module.add_function(wrap_pyfunction!(sum, module)?)?;
    module.add_function(wrap_pyfunction!(cumsum_scratch_len, module)?)?;
    module.add_function(wrap_pyfunction!(cumsum, module)?)?;
    module.add_function(wrap_pyfunction!(layer_norm, module)?)?;
    module.add_function(wrap_pyfunction!(rms_norm, module)?)?;
    module.add_function(wrap_pyfunction!(norm_backward, module)?)?;
    module.add_function(wrap_pyfunction!(norm_weight_grad, module)?)?;
    module.add_function(wrap_pyfunction!(norm_residual, module)?)?;
    module.add_function(wrap_pyfunction!(norm_partials_len, module)?)?;
    module.add_function(wrap_pyfunction!(norm_backward_fused, module)?)?;
    module.add_function(wrap_pyfunction!(cross_entropy, module)?)?;
    module.add_function(wrap_pyfunction!(cross_entropy_backward, module)?)?;
    module.add_function(wrap_pyfunction!(cross_entropy_fused, module)?)?;
    module.add_function(wrap_pyfunction!(cross_entropy_scale, module)?)?;
    module.add_function(wrap_pyfunction!(variants, module)?)?;
    module.add("ALIGNMENT", ptxkit_runtime::EXTERNAL_ALIGNMENT)?;
    // The widest rows the fused cross-entropy holds on chip (f32, bf16): past them it reads the
    // logits twice.
    module.add("ON_CHIP_COLS_F32", kernels::softmax::on_chip::on_chip_cols::<f32>())?;
    module.add(
        "ON_CHIP_COLS_BF16",
        kernels::softmax::on_chip::on_chip_cols::<ptxkit::device::mma::Bf16>(),
    )?;
    Ok(())
}
