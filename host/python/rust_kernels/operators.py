"""The torch side: custom operators that allocate outputs with torch and launch on its stream."""

import functools
import math
from typing import Optional

import torch

from . import _native

_LIBRARY = "rust_kernels"


def _ready(name, x, dtype=torch.float32):
    """``x`` as the kernels take it: a contiguous CUDA tensor of ``dtype`` at an aligned address."""
    # The usual case first, without a new tensor object (half of this function's cost per call).
    if (
        type(x) is torch.Tensor
        and x.is_cuda
        and x.dtype is dtype
        and not x.requires_grad
        and x.is_contiguous()
        and x.data_ptr() % _native.ALIGNMENT == 0
    ):
        return x
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        raise TypeError(f"{name}: the tensor is on {x.device}; move it to the GPU first (.cuda())")
    if x.dtype != dtype:
        raise TypeError(f"{name}: dtype {x.dtype} given, {dtype} expected; convert it first (.to({dtype}))")
    x = x.detach().contiguous()
    if x.data_ptr() % _native.ALIGNMENT != 0:
        # A view at an offset into its storage: the kernels were tested on aligned bases only.
        x = x.clone()
    return x


# The current stream's raw handle without building a torch.cuda.Stream (a few µs a call); the
# public spelling where this private one is missing.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_stream_of = _raw_stream or (lambda device: torch.cuda.current_stream(device).cuda_stream)


def _launch_args(x):
    device = x.get_device()
    return {"stream": _stream_of(device), "device": device}


# Bound once: two attribute lookups fewer per call.
_is_compiling, _grad_enabled = torch.compiler.is_compiling, torch.is_grad_enabled


def _eager(*tensors):
    """Whether a call may skip torch.library's dispatch (its cost: docs/perf-log.md, "Figures moved
    from code comments"): plain tensors, outside torch.compile, with no gradient to record. Anything
    else goes through the custom operator."""
    if _is_compiling():
        return False
    grad = _grad_enabled()
    # A loop, not all() over a generator: a generator object per call costs more than the test.
    for t in tensors:
        if type(t) is not torch.Tensor or (grad and t.requires_grad):
            return False
    return True


def _elementwise(launch, a, b, *options):
    """``launch(a, b, out, stream, device, *options)`` for two inputs of one shape into a new
    output: the common case straight to the native layer, which checks every argument itself
    (cheaper than checking in Python first), its arguments positional (no keyword dicts built and
    merged per call; both measured: docs/perf-log.md, change 78); whatever it refuses goes the
    careful way, which converts what can be converted (views, offsets) and otherwise raises with
    what to do."""
    if type(a) is torch.Tensor and a.is_cuda:
        out = torch.empty_like(a)
        device = a.get_device()
        try:
            launch(a, b, out, _stream_of(device), device, *options)
            return out
        except (TypeError, ValueError):
            pass
    a, b = _ready("a", a), _ready("b", b)
    _same_device(a, b)
    if a.shape != b.shape:
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)}: the shapes must be equal (no broadcasting)")
    out = torch.empty_like(a)
    if a.numel():
        device = a.get_device()
        launch(a, b, out, _stream_of(device), device, *options)
    return out


def _same_device(*tensors):
    # Device indices (ints) compare faster than torch.device objects are made.
    first = tensors[0].get_device()
    for t in tensors[1:]:
        if t.get_device() != first:
            devices = {t.device for t in tensors}
            raise ValueError(f"the tensors are on different devices: {sorted(map(str, devices))}")


_library = torch.library.Library(_LIBRARY, "DEF")


class _Operator:
    """An operator of the library whose kernel is a Python function, registered through
    ``torch.library.Library``: the dispatcher calls the function directly, where
    ``torch.library.custom_op``'s Python layer, and a gradient registered on the operator
    (``torch.library.register_autograd``, a Python kernel the dispatcher enters on every call, a
    gradient or not), cost far more a call (measured: docs/perf-log.md, changes 69 and 70). The
    schema is inferred from the function's annotations, as ``custom_op`` infers it. The function is
    the kernel for CUDA and for CPU tensors alike, so that a CPU tensor gets its message. A gradient
    is given by ``register_autograd``: calls through this object that record one go through a
    ``torch.autograd.Function`` (which ``torch.compile`` traces as well), the others straight to
    the operator."""

    def __init__(self, name, impl):
        _library.define(name + torch.library.infer_schema(impl, mutates_args=()))
        for key in ("CUDA", "CPU"):
            _library.impl(name, impl, key)
        self.name = f"{_LIBRARY}::{name}"
        self.overload = getattr(getattr(torch.ops, _LIBRARY), name).default
        self._gradient = None

    def __call__(self, *args):
        if self._gradient is not None and _grad_enabled():
            for arg in args:
                if isinstance(arg, torch.Tensor) and arg.requires_grad:
                    return self._gradient(*args)
        return self.overload(*args)

    def register_fake(self, fake):
        torch.library.register_fake(self.name, fake, lib=_library)
        return fake

    def register_autograd(self, backward, setup_context=None):
        overload = self.overload

        class Gradient(torch.autograd.Function):
            @staticmethod
            def forward(*args):
                return overload(*args)

            @staticmethod
            def setup_context(ctx, inputs, output):
                if setup_context is not None:
                    setup_context(ctx, inputs, output)

            @staticmethod
            def backward(ctx, *grads):
                return backward(ctx, *grads)

        Gradient.__name__ = Gradient.__qualname__ = f"{self.name.split('::')[1]}_gradient"
        self._gradient = Gradient.apply


# transpose ---------------------------------------------------------------------------------------


def _transpose_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    if x.dim() != 2:
        raise ValueError(f"x: {x.dim()} dimensions given ({tuple(x.shape)}), 2 expected")
    out = torch.empty((x.shape[1], x.shape[0]), device=x.device, dtype=x.dtype)
    if x.numel():
        _native.transpose(x, out, variant=variant, **_launch_args(x))
    return out


_transpose = _Operator("transpose", _transpose_impl)


@_transpose.register_fake
def _(x, variant):
    return x.new_empty((x.shape[1], x.shape[0]))


def _transpose_backward(ctx, grad):
    return _transpose(grad, ctx.variant), None


def _transpose_setup(ctx, inputs, output):
    ctx.variant = inputs[1]


_transpose.register_autograd(_transpose_backward, setup_context=_transpose_setup)


def transpose(x, variant="auto"):
    """``x.T`` of a 2-D float32 CUDA tensor, as a new contiguous tensor."""
    return _transpose_impl(x, variant) if _eager(x) else _transpose(x, variant)


# softmax -----------------------------------------------------------------------------------------


def _softmax_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    if x.dim() == 0:
        raise ValueError("x: a 0-dimensional tensor has no rows")
    out = torch.empty_like(x)
    if x.numel():
        cols = x.shape[-1]
        _native.softmax(x.view(-1, cols), out.view(-1, cols), variant=variant, **_launch_args(x))
    return out


_softmax = _Operator("softmax", _softmax_impl)


@_softmax.register_fake
def _(x, variant):
    return torch.empty_like(x)


def _softmax_backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return y * (grad - (grad * y).sum(dim=-1, keepdim=True)), None


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


_softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)


def softmax(x, dim=-1, variant="auto"):
    """The softmax over the last dimension of a float32 CUDA tensor (``torch.softmax(x, -1)``)."""
    if dim not in (-1, x.dim() - 1):
        raise ValueError(f"dim={dim}: only the last dimension is supported; move it last (x.transpose)")
    return _softmax_impl(x, variant) if _eager(x) else _softmax(x, variant)


# layer_norm, rms_norm ----------------------------------------------------------------------------


def _last_dimension(name, x, normalized_shape):
    """``normalized_shape`` as the kernels take it: the last dimension of ``x``, alone."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.dim() == 0 or shape != (x.shape[-1],):
        raise ValueError(
            f"{name}: normalized_shape={shape} on a tensor of shape {tuple(x.shape)}: only the last dimension "
            "is supported; flatten the normalised dimensions into the last one (x.flatten(-k))"
        )


def _vector(name, v, cols, dtype=torch.float32):
    if v is None:
        return None
    v = _ready(name, v, dtype)
    if tuple(v.shape) != (cols,):
        raise ValueError(f"{name}: shape {tuple(v.shape)} given, ({cols},) expected")
    return v


def _norm_rows(x):
    """``x`` ready, its rows and its columns (the last dimension)."""
    x = _ready("x", x)
    return x, math.prod(x.shape[:-1]), x.shape[-1]


def _layer_norm_impl(
    x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor], eps: float, variant: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The output (x's shape), and each row's mean and rstd (x.numel() / cols each)."""
    x, rows, cols = _norm_rows(x)
    weight, bias = _vector("weight", weight, cols), _vector("bias", bias, cols)
    out = torch.empty_like(x)
    mean, rstd = x.new_empty(rows), x.new_empty(rows)
    if x.numel():
        _native.layer_norm(
            x.view(rows, cols), weight, bias, out.view(rows, cols), mean, rstd, eps=eps, variant=variant, **_launch_args(x)
        )
    return out, mean, rstd


def _rms_norm_impl(
    x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, variant: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The output (x's shape), and each row's rstd (x.numel() / cols)."""
    x, rows, cols = _norm_rows(x)
    weight = _vector("weight", weight, cols)
    out = torch.empty_like(x)
    rstd = x.new_empty(rows)
    if x.numel():
        _native.rms_norm(x.view(rows, cols), weight, out.view(rows, cols), rstd, eps=eps, variant=variant, **_launch_args(x))
    return out, rstd


def _norm_backward_impl(
    x: torch.Tensor,
    grad: torch.Tensor,
    weight: Optional[torch.Tensor],
    mean: Optional[torch.Tensor],
    rstd: torch.Tensor,
) -> torch.Tensor:
    """The input's gradient (layer norm where ``mean`` is given, else RMS norm)."""
    x, rows, cols = _norm_rows(x)
    grad = _ready("grad", grad)
    dx = torch.empty_like(x)
    if x.numel():
        _native.norm_backward(
            x.view(rows, cols),
            grad.view(rows, cols),
            _vector("weight", weight, cols),
            None if mean is None else _ready("mean", mean),
            _ready("rstd", rstd),
            dx.view(rows, cols),
            **_launch_args(x),
        )
    return dx


def _norm_weight_grad_impl(
    x: torch.Tensor, grad: torch.Tensor, mean: Optional[torch.Tensor], rstd: torch.Tensor, with_bias: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight's gradient, and the bias's (empty unless ``with_bias``)."""
    x, rows, cols = _norm_rows(x)
    grad = _ready("grad", grad)
    dweight = x.new_empty(cols)
    dbias = x.new_empty(cols if with_bias else 0)
    if x.numel():
        _native.norm_weight_grad(
            x.view(rows, cols),
            grad.view(rows, cols),
            None if mean is None else _ready("mean", mean),
            _ready("rstd", rstd),
            dweight,
            dbias if with_bias else None,
            **_launch_args(x),
        )
    else:
        dweight.zero_()
        dbias.zero_()
    return dweight, dbias


#: The widest row whose three gradients come from one read of x and dy (kernels::norm::backward_fused).
_FUSED_COLS = 8192


def _norm_backward_fused_impl(
    x: torch.Tensor,
    grad: torch.Tensor,
    weight: Optional[torch.Tensor],
    mean: Optional[torch.Tensor],
    rstd: torch.Tensor,
    with_bias: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dx, the weight's gradient and the bias's (empty unless ``with_bias``) from one read of x and
    dy (rows up to 8192 columns, x not empty)."""
    x, rows, cols = _norm_rows(x)
    grad = _ready("grad", grad)
    dx, dweight = torch.empty_like(x), x.new_empty(cols)
    dbias = x.new_empty(cols if with_bias else 0)
    partials = x.new_empty(_native.norm_partials_len(rows, cols))
    _native.norm_backward_fused(
        x.view(rows, cols),
        grad.view(rows, cols),
        _vector("weight", weight, cols),
        None if mean is None else _ready("mean", mean),
        _ready("rstd", rstd),
        dx.view(rows, cols),
        partials,
        dweight,
        dbias if with_bias else None,
        **_launch_args(x),
    )
    return dx, dweight, dbias


_layer_norm = _Operator("layer_norm", _layer_norm_impl)
_rms_norm = _Operator("rms_norm", _rms_norm_impl)
_norm_backward = _Operator("norm_backward", _norm_backward_impl)
_norm_weight_grad = _Operator("norm_weight_grad", _norm_weight_grad_impl)
_norm_backward_fused = _Operator("norm_backward_fused", _norm_backward_fused_impl)


def _statistics_like(x):
    return x.new_empty(math.prod(x.shape[:-1]))


@_layer_norm.register_fake
def _(x, weight, bias, eps, variant):
    return torch.empty_like(x), _statistics_like(x), _statistics_like(x)


@_rms_norm.register_fake
def _(x, weight, eps, variant):
    return torch.empty_like(x), _statistics_like(x)


@_norm_backward.register_fake
def _(x, grad, weight, mean, rstd):
    return torch.empty_like(x)


@_norm_weight_grad.register_fake
def _(x, grad, mean, rstd, with_bias):
    cols = x.shape[-1]
    return x.new_empty(cols), x.new_empty(cols if with_bias else 0)


@_norm_backward_fused.register_fake
def _(x, grad, weight, mean, rstd, with_bias):
    cols = x.shape[-1]
    return torch.empty_like(x), x.new_empty(cols), x.new_empty(cols if with_bias else 0)


def _norm_gradients(ctx, grad, mean, rstd):
    """(dx, dweight, dbias) of either norm, each None where not needed."""
    x, weight = ctx.saved_tensors[:2]
    grad = grad.contiguous()
    dx = dweight = dbias = None
    want_weight = weight is not None and ctx.needs_input_grad[1]
    want_bias = ctx.has_bias and ctx.needs_input_grad[2]
    if ctx.needs_input_grad[0] and (want_weight or want_bias) and 0 < x.shape[-1] <= _FUSED_COLS and x.numel():
        # All three from one read of x and dy.
        dx, dweight, dbias = _norm_backward_fused(x, grad, weight, mean, rstd, want_bias)
        return dx, dweight if want_weight else None, dbias if want_bias else None
    if ctx.needs_input_grad[0]:
        dx = _norm_backward(x, grad, weight, mean, rstd)
    if want_weight or want_bias:
        dweight, dbias = _norm_weight_grad(x, grad, mean, rstd, want_bias)
        dweight = dweight if want_weight else None
        dbias = dbias if want_bias else None
    return dx, dweight, dbias


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, _, _ = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.has_bias = bias is not None
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_gradient(ctx, grad, _grad_mean, _grad_rstd):
    mean, rstd = ctx.saved_tensors[2:]
    dx, dweight, dbias = _norm_gradients(ctx, grad, mean, rstd)
    return dx, dweight, dbias, None, None


def _rms_norm_setup(ctx, inputs, output):
    x, weight, _, _ = inputs
    _, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.has_bias = False
    ctx.mark_non_differentiable(rstd)


def _rms_norm_gradient(ctx, grad, _grad_rstd):
    (rstd,) = ctx.saved_tensors[2:]
    dx, dweight, _ = _norm_gradients(ctx, grad, None, rstd)
    return dx, dweight, None, None


_layer_norm.register_autograd(_layer_norm_gradient, setup_context=_layer_norm_setup)
_rms_norm.register_autograd(_rms_norm_gradient, setup_context=_rms_norm_setup)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, variant="auto"):
    """``torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)`` over the last
    dimension of a float32 CUDA tensor (``normalized_shape`` must be ``(x.shape[-1],)``): each
    row's mean, and its variance from the deviations, in f32; with autograd for x, the weight and
    the bias."""
    _last_dimension("x", x, normalized_shape)
    tensors = [t for t in (x, weight, bias) if t is not None]
    op = _layer_norm_impl if _eager(*tensors) else _layer_norm
    return op(x, weight, bias, float(eps), variant)[0]


def rms_norm(x, normalized_shape, weight=None, eps=None, variant="auto"):
    """``torch.nn.functional.rms_norm(x, normalized_shape, weight, eps)`` over the last dimension of
    a float32 CUDA tensor (``normalized_shape`` must be ``(x.shape[-1],)``); ``eps=None`` is
    float32's machine epsilon, as PyTorch's default; with autograd for x and the weight."""
    _last_dimension("x", x, normalized_shape)
    eps = torch.finfo(torch.float32).eps if eps is None else float(eps)
    tensors = [t for t in (x, weight) if t is not None]
    op = _rms_norm_impl if _eager(*tensors) else _rms_norm
    return op(x, weight, eps, variant)[0]


# add_layer_norm, add_rms_norm --------------------------------------------------------------------


def _residual_norm_impl(
    x: torch.Tensor,
    residual: Optional[torch.Tensor],
    weight: Optional[torch.Tensor],
    bias: Optional[torch.Tensor],
    eps: float,
    centered: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The norm of ``x + residual`` (or of x), and the sum (empty without a residual)."""
    dtype = x.dtype if isinstance(x, torch.Tensor) else None
    if dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"x: dtype {dtype} given; float32 or bfloat16 expected")
    x = _ready("x", x, dtype)
    rows, cols = math.prod(x.shape[:-1]), x.shape[-1]
    if residual is not None:
        residual = _ready("residual", residual, dtype)
        _same_device(x, residual)
        if residual.shape != x.shape:
            raise ValueError(f"residual: shape {tuple(residual.shape)} given, x's {tuple(x.shape)} expected")
    weight, bias = _vector("weight", weight, cols, dtype), _vector("bias", bias, cols, dtype)
    out = torch.empty_like(x)
    total = torch.empty_like(x) if residual is not None else x.new_empty(0)
    if x.numel():
        matrix = lambda t: None if t is None else t.view(rows, cols)
        _native.norm_residual(
            x.view(rows, cols),
            matrix(residual),
            None if residual is None else total.view(rows, cols),
            weight,
            bias,
            out.view(rows, cols),
            None,
            None,
            centered=centered,
            bf16=dtype == torch.bfloat16,
            eps=eps,
            **_launch_args(x),
        )
    return out, total


_residual_norm = _Operator("residual_norm", _residual_norm_impl)


@_residual_norm.register_fake
def _(x, residual, weight, bias, eps, centered):
    return torch.empty_like(x), torch.empty_like(x) if residual is not None else x.new_empty(0)


def _no_gradient(name, *tensors):
    if _grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        raise RuntimeError(
            f"{name} has no backward pass yet: call it under torch.no_grad() (inference), or use "
            "rust_kernels.layer_norm / rms_norm on float32, which have one"
        )


def _residual_norm_call(name, x, residual, weight, bias, eps, centered):
    _no_gradient(name, x, residual, weight, bias)
    tensors = [t for t in (x, residual, weight, bias) if t is not None]
    op = _residual_norm_impl if _eager(*tensors) else _residual_norm
    y, total = op(x, residual, weight, bias, float(eps), centered)
    return (y, total) if residual is not None else y


def add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    """``(layer_norm(x + residual), x + residual)`` over the last dimension of float32 or bfloat16
    CUDA tensors, in one pass: the sum rounded to x's type (as ``x + residual``) and returned as the
    next residual stream; the statistics in f32, the output in x's type. ``residual=None``: the
    layer norm of x alone (bfloat16 too). Inference only: no backward pass yet."""
    return _residual_norm_call("add_layer_norm", x, residual, weight, bias, eps, True)


def add_rms_norm(x, residual, weight=None, eps=None):
    """``(rms_norm(x + residual), x + residual)`` as :func:`add_layer_norm` (``eps=None``:
    ``torch.finfo(x.dtype).eps``, as PyTorch's ``rms_norm``). Inference only: no backward pass
    yet."""
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    return _residual_norm_call("add_rms_norm", x, residual, weight, None, eps, False)


# cross_entropy -----------------------------------------------------------------------------------

_REDUCTIONS = ("mean", "sum", "none")


def _logits_dtype(logits):
    """The logits' type as the kernels take it: bfloat16 as given, anything else float32 (which
    ``_ready`` then asks for)."""
    return torch.bfloat16 if logits.dtype is torch.bfloat16 else torch.float32


def _f32_outputs(logits, rows):
    """Each row's loss, each row's (m, l), and the total: float32 whatever the logits' type."""
    f32 = {"device": logits.device, "dtype": torch.float32}
    return torch.empty(rows, **f32), torch.empty(rows, 2, **f32), torch.empty(2, **f32)


def _cross_entropy_inputs(logits, target):
    """The logits and targets as the kernels take them, with their (rows, classes)."""
    logits = _ready("logits", logits, _logits_dtype(logits))
    target = _ready("target", target, torch.int64)
    if logits.dim() != 2:
        raise ValueError(f"logits: {logits.dim()} dimensions given ({tuple(logits.shape)}), 2 expected (rows, classes)")
    rows, classes = logits.shape
    if tuple(target.shape) != (rows,):
        raise ValueError(f"target: shape {tuple(target.shape)} given, ({rows},) expected: one class index per row")
    _same_device(logits, target)
    if rows and classes == 0:
        raise ValueError("logits: no classes (shape (rows, 0)); each row needs at least one")
    return logits, target, rows


def _empty_total(total, reduction):
    # No rows: the mean of nothing is NaN, the sum 0, as PyTorch's.
    total.copy_(torch.tensor([float("nan") if reduction == "mean" else 0.0, 0.0]))


def _cross_entropy_impl(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int, reduction: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's loss and (maximum, ln Σ e^(x − maximum)), and ``total``: the reduced loss and the
    rows counted."""
    logits, target, rows = _cross_entropy_inputs(logits, target)
    losses, stats, total = _f32_outputs(logits, rows)
    if rows == 0:
        _empty_total(total, reduction)
        return losses, stats, total
    reduced = reduction != "none"
    launch = _launch_args(logits)
    _native.cross_entropy(
        logits,
        target,
        losses,
        stats,
        total if reduced else None,
        _ticket(logits.device, launch["stream"]) if reduced else None,
        ignore_index=ignore_index,
        reduction=reduction,
        bf16=logits.dtype is torch.bfloat16,
        **launch,
    )
    return losses, stats, total


_cross_entropy = _Operator("cross_entropy", _cross_entropy_impl)


@_cross_entropy.register_fake
def _(logits, target, ignore_index, reduction):
    return _f32_outputs(logits, logits.shape[0])


def _cross_entropy_backward_impl(
    logits: torch.Tensor,
    target: torch.Tensor,
    stats: torch.Tensor,
    grad_loss: torch.Tensor,
    count: Optional[torch.Tensor],
    ignore_index: int,
) -> torch.Tensor:
    logits = _ready("logits", logits, _logits_dtype(logits))
    target, stats = _ready("target", target, torch.int64), _ready("stats", stats)
    grad_loss = _ready("grad_loss", grad_loss)
    count = None if count is None else _ready("count", count)
    grad = torch.empty_like(logits)
    if logits.numel():
        _native.cross_entropy_backward(
            logits,
            target,
            stats,
            grad_loss,
            count,
            grad,
            ignore_index=ignore_index,
            bf16=logits.dtype is torch.bfloat16,
            **_launch_args(logits),
        )
    return grad


_cross_entropy_backward = _Operator("cross_entropy_backward", _cross_entropy_backward_impl)


@_cross_entropy_backward.register_fake
def _(logits, target, stats, grad_loss, count, ignore_index):
    return torch.empty_like(logits)


def _cross_entropy_setup(ctx, inputs, output):
    logits, target, ignore_index, reduction = inputs
    _, stats, total = output
    ctx.save_for_backward(logits, target, stats, total)
    ctx.ignore_index, ctx.reduction = ignore_index, reduction
    ctx.mark_non_differentiable(stats)


def _cross_entropy_gradient(ctx, grad_losses, grad_stats, grad_total):
    logits, target, stats, total = ctx.saved_tensors
    if ctx.reduction == "none":
        grad_loss, count = grad_losses, None
    else:
        # The loss is total[0]; total[1] (the rows counted) divides a mean's gradient.
        grad_loss = grad_total[0:1]
        count = total[1:2] if ctx.reduction == "mean" else None
    # The loss gradient in float32 whatever the loss's type (a bfloat16 loss's, say).
    grad_loss = grad_loss.to(torch.float32).contiguous()
    grad = _cross_entropy_backward(logits, target, stats, grad_loss, count, ctx.ignore_index)
    return grad, None, None, None


_cross_entropy.register_autograd(_cross_entropy_gradient, setup_context=_cross_entropy_setup)


# Training can read the logits once: the forward pass writes their gradient for a loss gradient of
# 1 beside the loss, and the backward pass multiplies it by the loss gradient in place where that
# is not 1 (after ``loss.backward()`` on a mean or a sum, nothing at all). Rows up to
# ``_FUSED_MIN_CLASSES`` keep the two passes: a warp per row, where the fused pass takes a
# 1024-thread block; so do rows longer than the chip holds (read twice either way; the one-block-
# per-row fused pass ran slower than the two passes there on the H200). ``_FUSED_PIPELINED``: the
# kernel whose blocks take rows a grid apart, each row's loads issued while the one before is
# written (kernels::cross_entropy::pipelined; 1.5x the two passes at 8192 x 50257 f32 on an H100:
# docs/perf-log.md, change 136's outcome).
_FUSED_MIN_CLASSES = 1025
_FUSED_TRAINING = True
_FUSED_PIPELINED = True


def _cross_entropy_fused_impl(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int, reduction: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """As ``_cross_entropy_impl``, and the logits' gradient for a loss gradient of 1."""
    logits, target, rows = _cross_entropy_inputs(logits, target)
    losses, stats, total = _f32_outputs(logits, rows)
    grad = torch.empty_like(logits)
    if rows == 0:
        _empty_total(total, reduction)
        return losses, stats, total, grad
    reduced = reduction != "none"
    launch = _launch_args(logits)
    _native.cross_entropy_fused(
        logits,
        target,
        losses,
        stats,
        total if reduced else None,
        _ticket(logits.device, launch["stream"]) if reduced else None,
        torch.empty(1, device=logits.device, dtype=torch.float32) if reduction == "mean" else None,
        grad,
        ignore_index=ignore_index,
        reduction=reduction,
        bf16=logits.dtype is torch.bfloat16,
        pipelined=_FUSED_PIPELINED,
        **launch,
    )
    return losses, stats, total, grad


_cross_entropy_fused = _Operator("cross_entropy_fused", _cross_entropy_fused_impl)


@_cross_entropy_fused.register_fake
def _(logits, target, ignore_index, reduction):
    return (*_f32_outputs(logits, logits.shape[0]), torch.empty_like(logits))


def _cross_entropy_fused_setup(ctx, inputs, output):
    logits, target, ignore_index, reduction = inputs
    _, stats, total, grad = output
    ctx.save_for_backward(logits, target, stats, total)
    ctx.ignore_index, ctx.reduction = ignore_index, reduction
    ctx.mark_non_differentiable(stats, grad)
    # No zeros made for the outputs no gradient reaches (the gradient output's would be a fill
    # as large as the logits).
    ctx.set_materialize_grads(False)
    # Taken by the first backward pass, which scales it in place and hands it on (no copy: autograd
    # keeps a gradient no one else holds); a second one, through a retained graph, recomputes it.
    ctx.fused_grad = grad


def _cross_entropy_fused_gradient(ctx, grad_losses, grad_stats, grad_total, grad_grad):
    reaching = grad_losses if ctx.reduction == "none" else grad_total
    if reaching is None:
        # Nothing reaches the loss (gradients are not materialised as zeros here).
        return None, None, None, None
    grad, ctx.fused_grad = ctx.fused_grad, None
    if grad is None:
        return _cross_entropy_gradient(ctx, grad_losses, grad_stats, grad_total)
    logits, target, _, _ = ctx.saved_tensors
    grad_loss = grad_losses if ctx.reduction == "none" else grad_total[0:1]
    if grad.numel():
        # The targets as given (a strided view, say): as the kernels take them, as forward did.
        target = _ready("target", target, torch.int64)
        grad_loss = _ready("grad_loss", grad_loss.to(torch.float32))
        _native.cross_entropy_scale(
            target,
            grad_loss,
            grad,
            ignore_index=ctx.ignore_index,
            bf16=grad.dtype is torch.bfloat16,
            **_launch_args(grad),
        )
    return grad, None, None, None


_cross_entropy_fused.register_autograd(_cross_entropy_fused_gradient, setup_context=_cross_entropy_fused_setup)


def _fused_training(logits):
    """Whether a cross-entropy call records a gradient that the fused pass can give: eager (under
    ``torch.compile`` the two passes are traced), rows from ``_FUSED_MIN_CLASSES`` to what the chip
    holds; never while ``_FUSED_TRAINING`` is off."""
    return (
        _FUSED_TRAINING
        and type(logits) is torch.Tensor
        and (logits.dtype is torch.float32 or logits.dtype is torch.bfloat16)
        and logits.requires_grad
        and _grad_enabled()
        and not _is_compiling()
        and logits.dim() == 2
        and _FUSED_MIN_CLASSES
        <= logits.shape[1]
        <= (_native.ON_CHIP_COLS_F32 if logits.dtype is torch.float32 else _native.ON_CHIP_COLS_BF16)
    )


def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
    """``torch.nn.functional.cross_entropy(logits, target, ignore_index=..., reduction=...)`` for
    float32 or bfloat16 CUDA logits of shape (rows, classes) and int64 class indices of shape
    (rows,): the softmax is never written out: one read of the logits forward, one read and one
    write of their gradient backward (bfloat16 logits: float32 arithmetic, the loss returned in
    bfloat16 and the gradient written in bfloat16, as PyTorch's types are). A fused training pass
    reads the logits once and writes their gradient once for a call that needs a gradient (eager,
    over 1024 classes): the forward pass writes it, the backward pass scales it in place unless the
    loss gradient is 1; it is off (``operators._FUSED_TRAINING``): measured slower than the two
    passes.
    Rows whose target is ``ignore_index`` add nothing and get a gradient of 0; the mean is over
    the other rows (NaN when there are none). A target outside ``0..classes`` that is not
    ``ignore_index`` gives that row a NaN loss and gradient (PyTorch stops with a device assert).
    Class weights, label smoothing and probability targets are not supported."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction={reduction!r}: choose 'mean', 'sum' or 'none'")
    if _fused_training(logits):
        losses, _, total, _ = _cross_entropy_fused(logits, target, int(ignore_index), reduction)
    else:
        op = _cross_entropy_impl if _eager(logits, target) else _cross_entropy
        losses, _, total = op(logits, target, int(ignore_index), reduction)
    loss = losses if reduction == "none" else total[0]
    # PyTorch's loss has the logits' type.
    return loss.to(torch.bfloat16) if logits.dtype is torch.bfloat16 else loss


# matmul ------------------------------------------------------------------------------------------


def _matmul_impl(a: torch.Tensor, b: torch.Tensor, variant: str) -> torch.Tensor:
    return _product(_native.matmul, a, b, torch.float32, variant)


_matmul = _Operator("matmul", _matmul_impl)


@_matmul.register_fake
def _(a, b, variant):
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = _matmul(grad, _transpose(b, "auto"), ctx.variant) if ctx.needs_input_grad[0] else None
    grad_b = _matmul(_transpose(a, "auto"), grad, ctx.variant) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None


def _matmul_setup(ctx, inputs, output):
    a, b, variant = inputs
    ctx.save_for_backward(a, b)
    ctx.variant = variant


_matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


def matmul(a, b, variant="auto"):
    """``a @ b`` for 2-D float32 CUDA tensors (m × k and k × n)."""
    return _matmul_impl(a, b, variant) if _eager(a, b) else _matmul(a, b, variant)


# matmul_bf16 -------------------------------------------------------------------------------------


def _product(launch, a, b, dtype, variant, out_dtype=torch.float32):
    """``a @ b`` of two 2-D ``dtype`` tensors into a new ``out_dtype`` one by ``launch`` (a native
    matmul): the product operators' shared body. The common case goes straight to the native
    layer, which checks every argument itself, positionally (as ``_elementwise``); whatever it
    refuses goes the careful way, which converts what can be converted (views, offsets) and
    otherwise raises with what to do."""
    if type(a) is torch.Tensor and type(b) is torch.Tensor and a.is_cuda and a.dim() == 2 and b.dim() == 2:
        c = a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)
        device = a.get_device()
        try:
            launch(a, b, c, _stream_of(device), device, variant)
            return c
        except (TypeError, ValueError):
            pass
    a, b = _ready("a", a, dtype), _ready("b", b, dtype)
    _same_device(a, b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)}: expected (m, k) and (k, n)")
    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=out_dtype)
    if c.numel():
        if a.shape[1] == 0:
            c.zero_()
        else:
            launch(a, b, c, variant=variant, **_launch_args(a))
    return c


def _matmul_bf16_impl(a: torch.Tensor, b: torch.Tensor, variant: str) -> torch.Tensor:
    return _product(_native.matmul_bf16, a, b, torch.bfloat16, variant)


_matmul_bf16 = _Operator("matmul_bf16", _matmul_bf16_impl)


@_matmul_bf16.register_fake
def _(a, b, variant):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.float32)


def _matmul_bf16_rounded_impl(a: torch.Tensor, b: torch.Tensor, variant: str) -> torch.Tensor:
    return _product(_native.matmul_bf16_rounded, a, b, torch.bfloat16, variant, torch.bfloat16)


_matmul_bf16_rounded = _Operator("matmul_bf16_rounded", _matmul_bf16_rounded_impl)


@_matmul_bf16_rounded.register_fake
def _(a, b, variant):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16)


def matmul_bf16(a, b, variant="auto", out_dtype=torch.float32):
    """``a.float() @ b.float()`` for 2-D bfloat16 CUDA tensors (m × k and k × n): the products of
    the bf16 values are exact and summed in f32 on the tensor cores (``wgmma`` with TMA on a
    persistent grid on an H100 or H200, ``mma.sync`` elsewhere). ``out_dtype`` float32 returns the
    sums; bfloat16 rounds each once (nearest, ties to even), as ``a @ b`` on bf16 tensors returns
    them, with half the bytes written. No autograd."""
    if out_dtype == torch.float32:
        impl, op = _matmul_bf16_impl, _matmul_bf16
    elif out_dtype == torch.bfloat16:
        impl, op = _matmul_bf16_rounded_impl, _matmul_bf16_rounded
    else:
        raise TypeError(f"out_dtype: {out_dtype} given; torch.float32 or torch.bfloat16 expected")
    return impl(a, b, variant) if _eager(a, b) else op(a, b, variant)


# matmul_tf32 -------------------------------------------------------------------------------------


def _matmul_tf32_impl(a: torch.Tensor, b: torch.Tensor, variant: str) -> torch.Tensor:
    return _product(_native.matmul_tf32, a, b, torch.float32, variant)


_matmul_tf32 = _Operator("matmul_tf32", _matmul_tf32_impl)


@_matmul_tf32.register_fake
def _(a, b, variant):
    return a.new_empty((a.shape[0], b.shape[1]))


def matmul_tf32(a, b, variant="auto"):
    """``a @ b`` for 2-D float32 CUDA tensors (m × k and k × n) on the tensor cores, as PyTorch
    computes it with ``torch.backends.cuda.matmul.allow_tf32 = True``: each operand read as TF32
    (its lower 13 mantissa bits dropped), the exact products summed in f32 (``wgmma`` with TMA on a
    persistent grid on an H100 or H200, ``mma.sync`` elsewhere). No autograd."""
    return _matmul_tf32_impl(a, b, variant) if _eager(a, b) else _matmul_tf32(a, b, variant)


# matmul_fp8 --------------------------------------------------------------------------------------


def _matmul_fp8_impl(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, use_fast_accum: bool, variant: str
) -> torch.Tensor:
    if not isinstance(b, torch.Tensor) or b.dim() != 2:
        raise ValueError("b: expected a 2-D tensor (k, n)")
    # The kernels read b as its transpose, row-major: the column-major b _scaled_mm takes as it is.
    a, bt = _ready("a", a, torch.float8_e4m3fn), _ready("b", b.t(), torch.float8_e4m3fn)
    scale_a, scale_b = _ready("scale_a", scale_a), _ready("scale_b", scale_b)
    _same_device(a, bt, scale_a, scale_b)
    if a.dim() != 2 or a.shape[1] != bt.shape[1]:
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)}: expected (m, k) and (k, n)")
    m, n, blocks = a.shape[0], bt.shape[0], -(-a.shape[1] // 128)
    column_blocks = -(-n // 128)
    # The kinds of scales the shapes fit (several only where they mean the same product, as a
    # 1 × 1 c's (1, 1) scales), each with the family that computes it; the variant named, if any,
    # picks among them.
    kinds = []
    if tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n):
        # Without fast accumulation, float32 totals every 128 of k.
        kinds.append(("row", "matmul_fp8_rowwise") if use_fast_accum else ("row_promoted", "matmul_fp8_rowwise_promoted"))
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        # Without fast accumulation, the row-wise tiles over float32 totals, every row's and
        # column's factor the same.
        kinds.append(("tensor", "matmul_fp8") if use_fast_accum else ("tensor_rows", "matmul_fp8_rowwise_promoted"))
    if tuple(scale_a.shape) == (m, blocks) and tuple(scale_b.shape) == (blocks, column_blocks):
        kinds.append(("block", "matmul_fp8_blockwise"))
    if not kinds:
        raise ValueError(
            f"scale_a {tuple(scale_a.shape)} and scale_b {tuple(scale_b.shape)}: one float32 each (per-tensor "
            f"scales), or ({m}, 1) and (1, {n}) (row-wise: a factor per row of a and one per column of b), or "
            f"({m}, {blocks}) and ({blocks}, {column_blocks}) (block scales: a's per row and block of 128 of k, b's "
            "per block of 128 of k and of 128 columns)"
        )
    # `auto` names no kernel: the first kind; a name is looked up once a kind.
    named = []
    if variant != "auto":
        named = [kind for kind in kinds if {variant, f"{kind[1]}_{variant}"} & set(_native.variants(kind[1]))]
    scaling = (named or kinds)[0][0]
    if scaling == "tensor_rows":
        scaling = "row_promoted"
        scale_a = scale_a.reshape(()).expand(m).contiguous()
        scale_b = scale_b.reshape(()).expand(n).contiguous()
    elif scaling == "block":
        # The kernels read a's factors block by block and b's by block of columns: the layouts
        # _scaled_mm asks for, where these transposes are views of contiguous tensors.
        scale_a, scale_b = scale_a.t().contiguous(), scale_b.t().contiguous()
    c = torch.empty((a.shape[0], bt.shape[0]), device=a.device, dtype=torch.bfloat16)
    if c.numel():
        if a.shape[1] == 0:
            c.zero_()
        else:
            _native.matmul_fp8(a, bt, c, scale_a, scale_b, variant=variant, scaling=scaling, **_launch_args(a))
    return c


_matmul_fp8 = _Operator("matmul_fp8", _matmul_fp8_impl)


@_matmul_fp8.register_fake
def _(a, b, scale_a, scale_b, use_fast_accum, variant):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16)


def matmul_fp8(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=False, variant="auto"):
    """``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)``: a (m × k) and b
    (k × n) float8_e4m3fn CUDA tensors (b column-major, as ``_scaled_mm`` takes it, is read in
    place; any other b is copied); scale_a and scale_b float32, one each (per-tensor scales), of
    shapes (m, 1) and (1, n) (row-wise scales: element (i, j) scaled by
    ``scale_a[i] · scale_b[j]``), or of shapes (m, ⌈k/128⌉) and (⌈k/128⌉, ⌈n/128⌉) (block scales,
    DeepSeek-V3's 1×128 and 128×128: each block of 128 of k's sums scaled by
    ``scale_a[i, block] · scale_b[block, j // 128]`` into float32 totals). The exact products are
    summed on the FP8 tensor cores (``wgmma`` with TMA on a persistent grid on an H100 or H200;
    32×32 tiles on the CUDA cores elsewhere), multiplied by the scales and rounded once to
    bfloat16. The FP8 tensor cores keep fewer bits in their sums than float32's: with
    ``use_fast_accum=True`` they sum all of k (per-tensor scales: ``matmul_fp8``'s tiles, named
    by ``variant``; row-wise: ``matmul_fp8_rowwise``'s); with ``use_fast_accum=False``
    (``_scaled_mm``'s default) each 128 of k's sums go into float32 totals (per-tensor or row-wise
    scales: ``matmul_fp8_rowwise_promoted``'s tiles, per-tensor scales given to them per row).
    Block scales always sum so. No autograd."""
    if out_dtype != torch.bfloat16:
        raise TypeError(f"out_dtype: {out_dtype} given; torch.bfloat16 expected (the only one yet)")
    if not isinstance(use_fast_accum, bool):
        raise TypeError(f"use_fast_accum: {use_fast_accum!r} given; True or False expected")
    args = (a, b, scale_a, scale_b, use_fast_accum, variant)
    return _matmul_fp8_impl(*args) if _eager(a, b, scale_a, scale_b) else _matmul_fp8(*args)


# quantize_fp8 ------------------------------------------------------------------------------------


def _quantize_fp8_impl(x: torch.Tensor, group_size: int, variant: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = _ready("x", x)
    if x.dim() != 2:
        raise ValueError(f"x: shape {tuple(x.shape)}; a 2-D tensor (rows, cols) expected")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size: {group_size!r} given; a whole number of at least 1 expected (128 for 1x128 blocks)")
    rows, cols = x.shape
    group = min(group_size, max(cols, 1))
    codes = torch.empty((rows, cols), device=x.device, dtype=torch.float8_e4m3fn)
    scales = torch.empty((rows, -(-cols // group)), device=x.device, dtype=torch.float32)
    if x.numel():
        _native.quantize_fp8(x, codes, scales, group, variant=variant, **_launch_args(x))
    return codes, scales


_quantize_fp8 = _Operator("quantize_fp8", _quantize_fp8_impl)


@_quantize_fp8.register_fake
def _(x, group_size, variant):
    group = min(group_size, max(x.shape[1], 1))
    return (
        x.new_empty(x.shape, dtype=torch.float8_e4m3fn),
        x.new_empty((x.shape[0], -(-x.shape[1] // group)), dtype=torch.float32),
    )


def quantize_fp8(x, group_size=128, variant="auto"):
    """FP8 quantisation of a 2-D float32 CUDA tensor x (rows × cols) in groups of ``group_size``
    consecutive elements of a row (128: DeepSeek-V3's 1×128 activation blocks; cols or more: one
    scale per row). Returns ``(codes, scales)``: codes float8_e4m3fn of x's shape, scales float32
    (rows × ⌈cols / group_size⌉), each group's ``amax / 448`` (amax at least 1e-12), its codes
    ``x · 448 / amax`` to the nearest e4m3, clamped to ±448, so that ``codes · scale`` approximates
    the group. A NaN in a group makes its scale and codes NaN. The scales are those
    ``matmul_fp8`` takes for a (1×128 blocks, as ``scales``) or per row. No autograd."""
    args = (x, group_size, variant)
    return _quantize_fp8_impl(*args) if _eager(x) else _quantize_fp8(*args)


# attention ---------------------------------------------------------------------------------------


def _attention_impl(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, variant: str, enable_gqa: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """O, and each query row's log-sum-exp (float32 (batch, heads, queries), log2 units of the scaled
    scores: what the backward pass reads) where the queries and keys are as many, else an empty
    tensor (decoding has no gradient)."""
    q, k, v = _ready("q", q, torch.bfloat16), _ready("k", k, torch.bfloat16), _ready("v", v, torch.bfloat16)
    _same_device(q, k, v)
    if q.dim() != 4 or k.dim() != 4 or v.shape != k.shape or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)}: expected q (batch, heads, queries, dim) "
            "and k and v of one shape (batch, heads_kv, keys, dim), with q's batch and dim"
        )
    heads, heads_kv, queries, keys = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    if heads != heads_kv:
        if not enable_gqa:
            raise ValueError(
                f"q has {heads} heads, k and v {heads_kv}: pass enable_gqa=True to share each KV head among a "
                "group of query heads (as scaled_dot_product_attention)"
            )
        if heads_kv == 0 or heads % heads_kv:
            raise ValueError(f"q's {heads} heads must be a multiple of k's and v's {heads_kv} (enable_gqa)")
    o = torch.empty_like(q)
    lse = q.new_empty(_lse_shape(q.shape, k.shape), dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    if keys == 0:
        # No key: each row a softmax over nothing times an empty V, as PyTorch's math backend.
        return o.zero_(), lse
    launch = _launch_args(q)
    if queries == keys:
        _native.attention(q, k, v, o, lse=lse, causal=causal, variant=variant, **launch)
        return o, lse
    length = _decode_partial_len(tuple(q.shape), tuple(k.shape), launch["device"], causal)
    partial = torch.empty(max(length, 1), device=q.device, dtype=torch.float32)
    _native.attention_decode(q, k, v, o, partial, causal=causal, variant=variant, **launch)
    return o, lse


def _lse_shape(q_shape, k_shape):
    """The saved log-sum-exps' shape: a row each where the queries and keys are as many, else none."""
    return tuple(q_shape[:3]) if q_shape[2] == k_shape[2] else (0,)


@functools.lru_cache(maxsize=1024)
def _decode_partial_len(q_shape, kv_shape, device, causal):
    return _native.attention_decode_partial_len(q_shape, kv_shape, device=device, causal=causal)


_attention = _Operator("attention", _attention_impl)


@_attention.register_fake
def _(q, k, v, causal, variant, enable_gqa):
    return torch.empty_like(q), q.new_empty(_lse_shape(q.shape, k.shape), dtype=torch.float32)


def _attention_backward_impl(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    grad: torch.Tensor,
    causal: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK and dV of ``o, lse = attention(q, k, v, causal)`` (as many queries as keys) from
    ``grad``, the forward's lse saving the scores' first pass."""
    q, k, v = _ready("q", q, torch.bfloat16), _ready("k", k, torch.bfloat16), _ready("v", v, torch.bfloat16)
    o, grad = _ready("o", o, torch.bfloat16), _ready("grad", grad, torch.bfloat16)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if q.numel() and k.numel():
        # Each row's lse and Δ, then the wgmma pass's f32 sums of dQ.
        rows = q.shape[0] * q.shape[1] * q.shape[2]
        stats = q.new_empty(_backward_stats_len(tuple(q.shape)), dtype=torch.float32)
        saved = lse.numel() == rows
        if saved:
            stats[:rows].copy_(lse.reshape(-1))
        _native.attention_backward(
            q, k, v, o, grad, dq, dk, dv, stats, causal=causal, saved_lse=saved, **_launch_args(q)
        )
    else:
        for gradient in (dq, dk, dv):
            gradient.zero_()
    return dq, dk, dv


@functools.lru_cache(maxsize=1024)
def _backward_stats_len(q_shape):
    return _native.attention_backward_stats_len(q_shape)


_attention_backward = _Operator("attention_backward", _attention_backward_impl)


@_attention_backward.register_fake
def _(q, k, v, o, lse, grad, causal):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, _, _ = inputs
    if q.shape[2] != k.shape[2]:
        raise NotImplementedError(
            "rust_kernels.attention: no gradient where the queries and keys differ in number (decoding); "
            "call it under torch.no_grad(), or detach q, k and v"
        )
    o, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal


def _attention_gradient(ctx, grad, _grad_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = _attention_backward(q, k, v, o, lse, grad.contiguous(), ctx.causal)
    return dq, dk, dv, None, None, None


_attention.register_autograd(_attention_gradient, setup_context=_attention_setup)


def attention(q, k, v, causal=False, variant="auto", enable_gqa=False):
    """``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
    enable_gqa=enable_gqa)`` for bfloat16 CUDA tensors: q (batch, heads, queries, dim), k and v
    (batch, heads_kv, keys, dim), f32 sums, bfloat16 out; dim any multiple of 8 up to 128 (64 and 128
    on every path; the others staged 64 or 128 wide on ``mma.sync``: ``rust_kernels.variants(
    "attention_any_dim")`` where queries and keys are as many); with ``enable_gqa=True``
    each KV head serves heads / heads_kv consecutive query heads, K and V never copied per query
    head. As many queries as keys: one fused kernel (online softmax; ``wgmma`` fed by TMA on an
    H100 or H200, ``mma.sync`` elsewhere; variants ``rust_kernels.variants("attention")`` and
    ``"attention_causal"``). Fewer or more queries (decoding a few tokens against a KV cache):
    flash-decoding, the keys in runs on their own warps and a second launch weighing the runs. The
    causal mask is SDPA's: query i attends to keys 0..=i (top-left where queries and keys differ in
    number). With autograd for q, k and v where the queries and keys are as many (on an H100 or
    H200 at head dims 64 and 128 three launches on ``wgmma``: each row's Δ (its lse saved by the
    forward), then dK, dV and dQ's f32 sums a block of 128 keys, then dQ; elsewhere two on ``mma.sync``: dQ, then dK and
    dV summed over each KV head's query heads); decoding has none.
    """
    if _eager(q, k, v):
        return _attention_impl(q, k, v, causal, variant, enable_gqa)[0]
    return _attention(q, k, v, causal, variant, enable_gqa)[0]


# conv2d ------------------------------------------------------------------------------------------


def _conv2d_impl(image: torch.Tensor, weight: torch.Tensor, variant: str) -> torch.Tensor:
    image, weight = _ready("image", image), _ready("weight", weight)
    _same_device(image, weight)
    out = torch.empty_like(image)
    if image.numel():
        _native.conv2d(image, weight, out, variant=variant, **_launch_args(image))
    return out


_conv2d = _Operator("conv2d", _conv2d_impl)


@_conv2d.register_fake
def _(image, weight, variant):
    return torch.empty_like(image)


def conv2d(image, weight, variant="auto"):
    """One channel, one filter: ``torch.nn.functional.conv2d(image[None, None], weight[None, None],
    padding=r)[0, 0]`` for a 2-D image and a square 3×3, 5×5 or 7×7 filter (r its radius)."""
    return _conv2d_impl(image, weight, variant) if _eager(image, weight) else _conv2d(image, weight, variant)


# add ---------------------------------------------------------------------------------------------


def _add_impl(a: torch.Tensor, b: torch.Tensor, variant: str) -> torch.Tensor:
    return _elementwise(_native.add, a, b, variant)


_add = _Operator("add", _add_impl)


@_add.register_fake
def _(a, b, variant):
    return torch.empty_like(a)


_add.register_autograd(lambda ctx, grad: (grad, grad, None))


def add(a, b, variant="auto"):
    """``a + b`` for float32 CUDA tensors of one shape (16-byte accesses; ``variant="vec_add"``:
    the seed's one element per thread)."""
    return _add_impl(a, b, variant) if _eager(a, b) else _add(a, b, variant)


# shared_mem_add ----------------------------------------------------------------------------------


def _shared_mem_add_impl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _elementwise(_native.shared_mem_add, a, b)


_shared_mem_add = _Operator("shared_mem_add", _shared_mem_add_impl)


@_shared_mem_add.register_fake
def _(a, b):
    return torch.empty_like(a)


def shared_mem_add(a, b):
    """The first seed's shared-memory example over the flattened tensors: ``s = a + b``, then each
    element plus its left neighbour's ``s`` within blocks of 256 (a block's first element alone)."""
    return _shared_mem_add_impl(a, b) if _eager(a, b) else _shared_mem_add(a, b)


# sum ---------------------------------------------------------------------------------------------


def _sum_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    if x.numel() == 0:
        return x.new_zeros(())
    launch = _launch_args(x)
    length, one_pass = _sum_plan(x.numel(), launch["device"], variant)
    if one_pass:
        # One launch, one allocation: the sum lands in element 0 of the partial sums' array, and
        # is returned as a view of it (a copy would be a second launch); the ticket is the
        # stream's own, which the kernel leaves at zero.
        out = torch.empty(length, device=x.device, dtype=x.dtype)
        _native.sum(x, out, None, _ticket(x.device, launch["stream"]), variant=variant, **launch)
        return out[0]
    # Two allocations, not two rows of one: each must start at an aligned address.
    scratch = [torch.empty(length, device=x.device, dtype=x.dtype) for _ in range(2)]
    ticket = torch.zeros(1, device=x.device, dtype=torch.int32)
    at = _native.sum(x, scratch[0], scratch[1], ticket, variant=variant, **launch)
    return scratch[at][0]


@functools.lru_cache(maxsize=1024)
def _sum_plan(n, device, variant):
    return _native.sum_scratch_len(n, device=device, variant=variant)


# A zero ticket per stream for the one-pass reductions, which leave it at zero: eager launches on
# one stream run in order, so they can share it. Bounded: a program that makes streams without end
# makes new tickets.
_tickets = {}
_MAX_TICKETS = 256


def _ticket(device, stream):
    # A graph may be replayed on another stream, beside eager calls on this one: a capture takes
    # a ticket of its own, zeroed in the graph.
    if _capturing():
        return torch.zeros(1, device=device, dtype=torch.int32)
    key = (device.index, stream)
    ticket = _tickets.get(key)
    if ticket is None:
        if len(_tickets) >= _MAX_TICKETS:
            _tickets.clear()
        ticket = _tickets[key] = torch.zeros(1, device=device, dtype=torch.int32)
    return ticket


_capturing = torch.cuda.is_current_stream_capturing


_sum = _Operator("sum", _sum_impl)


@_sum.register_fake
def _(x, variant):
    return x.new_empty(())


def _sum_backward(ctx, grad):
    return grad.expand(ctx.shape), None


def _sum_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape


_sum.register_autograd(_sum_backward, setup_context=_sum_setup)


def sum(x, variant="auto"):
    """The sum of every element of a float32 CUDA tensor, as a 0-dimensional tensor."""
    return _sum_impl(x, variant) if _eager(x) else _sum(x, variant)


# histogram ---------------------------------------------------------------------------------------


def _histogram_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    x = _ready("x", x, torch.uint8)
    bins = torch.zeros(256, device=x.device, dtype=torch.int32)
    if x.numel():
        _native.histogram(x, bins, variant=variant, **_launch_args(x))
    return bins


_histogram = _Operator("histogram", _histogram_impl)


@_histogram.register_fake
def _(x, variant):
    return x.new_empty(256, dtype=torch.int32)


def histogram(x, variant="auto"):
    """The counts of the 256 byte values over every element of a uint8 CUDA tensor, as int32:
    ``torch.bincount(x.flatten(), minlength=256)`` (int64 there), exact."""
    return _histogram_impl(x, variant) if _eager(x) else _histogram(x, variant)


# histogram_f32 -----------------------------------------------------------------------------------


def _histogram_f32_impl(x: torch.Tensor, lo: float, hi: float, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    bins = torch.zeros(256, device=x.device, dtype=torch.int32)
    if x.numel():
        _native.histogram_f32(x, bins, lo, hi, variant=variant, **_launch_args(x))
    return bins


_histogram_f32 = _Operator("histogram_f32", _histogram_f32_impl)


@_histogram_f32.register_fake
def _(x, lo, hi, variant):
    return x.new_empty(256, dtype=torch.int32)


def histogram_f32(x, lo=-1.0, hi=1.0, variant="auto"):
    """The counts of the elements of a float32 CUDA tensor in 256 equal bins over [lo, hi), as
    int32: bin ``floor((x - lo) * 256 / (hi - lo))`` in f32 (CUB's ``HistogramEven``); values
    outside the range and NaN are not counted (``torch.histc`` counts ``x == hi`` in the last bin
    and returns floats). Exact."""
    return _histogram_f32_impl(x, lo, hi, variant) if _eager(x) else _histogram_f32(x, lo, hi, variant)


# row_sum and row_max -----------------------------------------------------------------------------


def _row_reduce_impl(name, x: torch.Tensor, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    if x.dim() != 2:
        raise ValueError(f"x: {x.dim()} dimensions given ({tuple(x.shape)}), 2 expected")
    if x.shape[1] == 0:
        if name == "row_sum":
            return x.new_zeros(x.shape[0])
        raise ValueError(f"x: shape {tuple(x.shape)} has rows of no elements: they have no maximum")
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    if x.numel():
        launch = _launch_args(x)
        lengths = _row_plan(x.shape[0], x.shape[1], launch["device"])
        partials, tickets = _row_scratch(x.device, launch["stream"], lengths)
        getattr(_native, name)(x, out, partials, tickets, variant=variant, **launch)
    return out


@functools.lru_cache(maxsize=1024)
def _row_plan(rows, cols, device):
    return _native.row_reduce_scratch_len(rows, cols, device=device)


# The row reductions' scratch per stream, as the tickets of the one-pass reductions: the pieces'
# results and the rows' tickets (which the kernels leave at zero), grown to the longest asked for.
_row_scratches = {}


def _row_scratch(device, stream, lengths):
    partials, tickets = lengths
    if _capturing():
        return _new_row_scratch(device, partials, tickets)
    key = (device.index, stream)
    held = _row_scratches.get(key)
    if held is None or held[0].numel() < partials or held[1].numel() < tickets:
        if held is not None:
            partials, tickets = max(partials, held[0].numel()), max(tickets, held[1].numel())
        if len(_row_scratches) >= _MAX_TICKETS:
            _row_scratches.clear()
        held = _row_scratches[key] = _new_row_scratch(device, partials, tickets)
    return held


def _new_row_scratch(device, partials, tickets):
    return (
        torch.empty(partials, device=device, dtype=torch.float32),
        torch.zeros(tickets, device=device, dtype=torch.int32),
    )


def _row_sum_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    return _row_reduce_impl("row_sum", x, variant)


def _row_max_impl(x: torch.Tensor, variant: str) -> torch.Tensor:
    return _row_reduce_impl("row_max", x, variant)


_row_sum = _Operator("row_sum", _row_sum_impl)
_row_max = _Operator("row_max", _row_max_impl)


@_row_sum.register_fake
def _(x, variant):
    return x.new_empty(x.shape[0])


@_row_max.register_fake
def _(x, variant):
    return x.new_empty(x.shape[0])


def _row_sum_backward(ctx, grad):
    return grad[:, None].expand(ctx.shape), None


def _row_sum_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape


_row_sum.register_autograd(_row_sum_backward, setup_context=_row_sum_setup)


def row_sum(x, variant="auto"):
    """``x.sum(dim=1)`` for a 2-D float32 CUDA tensor: a warp per row for rows up to 4096, a block
    per row beyond."""
    return _row_sum_impl(x, variant) if _eager(x) else _row_sum(x, variant)


def row_max(x, variant="auto"):
    """``x.amax(dim=1)`` for a 2-D float32 CUDA tensor, as ``row_sum``'s kernels combine by the
    larger value. No autograd."""
    return _row_max_impl(x, variant) if _eager(x) else _row_max(x, variant)


# cumsum ------------------------------------------------------------------------------------------


def _cumsum_impl(x: torch.Tensor, exclusive: bool, variant: str) -> torch.Tensor:
    x = _ready("x", x)
    out = torch.empty_like(x)
    if x.numel():
        # One scratch tensor, which the extension cuts into the levels' arrays.
        scratch = torch.empty(_cumsum_scratch_len(x.numel()), device=x.device, dtype=x.dtype)
        _native.cumsum(x, out, scratch, exclusive=exclusive, variant=variant, **_launch_args(x))
    return out


@functools.lru_cache(maxsize=1024)
def _cumsum_scratch_len(n):
    return _native.cumsum_scratch_len(n)


_cumsum = _Operator("cumsum", _cumsum_impl)


@_cumsum.register_fake
def _(x, exclusive, variant):
    return torch.empty_like(x)


def _cumsum_backward(ctx, grad):
    flat = grad.reshape(-1)
    # Output i sums inputs 0..i (0..i-1 when exclusive): input k's gradient sums outputs k.. (k+1..).
    suffix = torch.flip(torch.cumsum(torch.flip(flat, [0]), 0), [0])
    if ctx.exclusive:
        suffix = suffix - flat
    return suffix.view_as(grad), None, None


def _cumsum_setup(ctx, inputs, output):
    ctx.exclusive = inputs[1]


_cumsum.register_autograd(_cumsum_backward, setup_context=_cumsum_setup)


def cumsum(x, exclusive=False, variant="auto"):
    """Prefix sums over every element of a float32 CUDA tensor in row-major order, the shape kept:
    ``torch.cumsum(x.flatten(), 0).view_as(x)``; ``exclusive=True`` starts from 0."""
    return _cumsum_impl(x, exclusive, variant) if _eager(x) else _cumsum(x, exclusive, variant)
