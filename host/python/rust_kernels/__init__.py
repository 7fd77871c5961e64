"""The project's Rust GPU kernels as PyTorch operators.

``rust_kernels.transpose``, ``softmax``, ``layer_norm``, ``rms_norm``, ``add_layer_norm`` and ``add_rms_norm`` (also bfloat16), ``cross_entropy``, ``row_sum``, ``row_max``, ``matmul``, ``matmul_tf32`` (on the tensor cores), ``conv2d``, ``sum``, ``cumsum``, ``add`` and ``shared_mem_add`` take CUDA float32
tensors and return new ones (``matmul_bf16`` takes bfloat16 ones and returns float32; ``matmul_fp8`` float8_e4m3fn ones and float32 scales (one each, row-wise or per block), and returns bfloat16, as ``torch._scaled_mm``; ``quantize_fp8`` float32 ones, returning float8_e4m3fn codes and float32 scales; ``attention`` takes and returns bfloat16, ``histogram`` counts uint8 values, ``histogram_f32`` float32 ones in 256 bins), computed by kernels written in Rust (compiled to PTX) and queued on
PyTorch's current stream of the tensors' device, in the device's primary context. They are
registered as ``torch.ops.rust_kernels.*`` custom operators (with fake implementations, so
``torch.compile`` traces them without graph breaks, and autograd where the backward is simple).
Each takes ``variant=``: ``"auto"`` (the device's tile configuration, or the fastest rung for the
shape) or the name of any kernel of its family (``rust_kernels.variants(op)``).

``rust_kernels.native`` is the extension itself: the same operators on any objects with
``__cuda_array_interface__`` (or torch tensors, read directly and taken on torch's word for where their memory is: faster; other arrays' memory is checked with the driver), outputs given by the caller, the stream and device passed
explicitly. It imports without PyTorch and without a GPU; calls that get past the argument checks
need the NVIDIA driver.
"""

from . import _native as native

#: The address alignment the kernels are given (tensors elsewhere are copied first).
ALIGNMENT = native.ALIGNMENT


def variants(op):
    """The kernels ``op`` (add, attention, attention_causal, attention_any_dim, attention_any_dim_causal,
    conv2d, cumsum, histogram, histogram_f32, layer_norm, matmul, matmul_bf16, matmul_bf16_rounded
    (``matmul_bf16`` with ``out_dtype=torch.bfloat16``), matmul_fp8, matmul_fp8_rowwise and
    matmul_fp8_blockwise (``matmul_fp8`` with row-wise or block scales: the same names, their family
    prefix left out, name the same tiles), matmul_tf32, quantize_fp8, rms_norm, row_max, row_sum,
    softmax, sum, transpose) can be asked for by name."""
    return native.variants(op)


try:
    import torch as _torch
except ImportError:  # The native layer works without PyTorch; the operators do not.
    _torch = None

if _torch is not None:
    from .operators import (
        add,
        add_layer_norm,
        add_rms_norm,
        attention,
        conv2d,
        cross_entropy,
        cumsum,
        histogram,
        histogram_f32,
        layer_norm,
        matmul,
        matmul_bf16,
        matmul_fp8,
        matmul_tf32,
        quantize_fp8,
        rms_norm,
        row_max,
        row_sum,
        shared_mem_add,
        softmax,
        sum,
        transpose,
    )
else:

    def _needs_torch(*_args, **_kwargs):
        raise ImportError(
            "rust_kernels' operators take torch tensors: install PyTorch (pip install torch); "
            "rust_kernels.native takes any object with __cuda_array_interface__"
        )

    add = add_layer_norm = add_rms_norm = attention = conv2d = cross_entropy = histogram = histogram_f32 = cumsum = matmul = matmul_bf16 = matmul_tf32 = _needs_torch
    matmul_fp8 = quantize_fp8 = _needs_torch
    layer_norm = rms_norm = row_max = row_sum = _needs_torch
    shared_mem_add = softmax = sum = transpose = _needs_torch

__all__ = [
    "ALIGNMENT",
    "add",
    "add_layer_norm",
    "add_rms_norm",
    "attention",
    "conv2d",
    "cross_entropy",
    "cumsum",
    "histogram",
    "histogram_f32",
    "layer_norm",
    "matmul",
    "matmul_bf16",
    "matmul_fp8",
    "matmul_tf32",
    "native",
    "quantize_fp8",
    "rms_norm",
    "row_max",
    "row_sum",
    "shared_mem_add",
    "softmax",
    "sum",
    "transpose",
    "variants",
]
