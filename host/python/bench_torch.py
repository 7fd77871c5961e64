"""Each operator against PyTorch's built-in on the same shapes (torch.utils.benchmark, CUDA
synchronised), and the per-call overhead of the Python path. Prints a table and, with --json
FILE, writes the figures. Run on a GPU with the wheel installed:
`python3 host/python/bench_torch.py --json OUT/torch-ops.json`."""

import argparse
import json

import torch
import torch.utils.benchmark as benchmark

import rust_kernels
from rust_kernels import native


def median_us(statement, **globals_):
    timer = benchmark.Timer(stmt=statement, globals=globals_)
    timer.timeit(3)  # warm-up: the first call opens the GPU and loads the kernels
    return timer.blocked_autorange(min_run_time=0.5).median * 1e6


def tf32_mm(x, y):
    """PyTorch's `x @ y` with TF32 allowed for that call only."""
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        return x @ y
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def norm_cases():
    """Layer norm and RMS norm at the issue's 65536 × 4096 (f32, with weight; layer norm with bias),
    forward alone and forward + backward (x's, the weight's and the bias's gradients), rated on the
    least they move: a read and a write forward; backward two more reads and a write."""
    rows, cols = 65536, 4096
    x = torch.randn(rows, cols, device="cuda") * 2 + 1
    w, b = torch.rand(cols, device="cuda") + 0.5, torch.rand(cols, device="cuda")
    xt, wt, bt = (t.clone().requires_grad_() for t in (x, w, b))
    size = 4 * x.numel()
    layer, rms = torch.nn.functional.layer_norm, torch.nn.functional.rms_norm
    g = torch.randn_like(x)

    def both(f):
        for t in (xt, wt, bt):
            t.grad = None
        f().backward(g)

    ours_layer = lambda a=x: rust_kernels.layer_norm(a, (cols,), w, b)
    ours_rms = lambda a=x: rust_kernels.rms_norm(a, (cols,), w, 1e-5)
    return [
        ("layer_norm", f"{rows}x{cols}", 2 * size, ours_layer, lambda: layer(x, (cols,), w, b)),
        ("rms_norm", f"{rows}x{cols}", 2 * size, ours_rms, lambda: rms(x, (cols,), w, 1e-5)),
        (
            "layer_norm+backward",
            f"{rows}x{cols}",
            5 * size,
            lambda: both(lambda: rust_kernels.layer_norm(xt, (cols,), wt, bt)),
            lambda: both(lambda: layer(xt, (cols,), wt, bt)),
        ),
        (
            "rms_norm+backward",
            f"{rows}x{cols}",
            5 * size,
            lambda: both(lambda: rust_kernels.rms_norm(xt, (cols,), wt, 1e-5)),
            lambda: both(lambda: rms(xt, (cols,), wt, 1e-5)),
        ),
    ]


def cross_entropy_cases():
    """Cross-entropy over a vocabulary (the issue's shapes), forward alone and forward + backward,
    rated on the least the logits can move: one read forward; for training one read and one write
    of their gradient in all."""
    out = []
    for dtype, rows, vocabulary in [
        (torch.float32, 8192, 50257),
        (torch.float32, 4096, 128256),
        (torch.bfloat16, 8192, 50257),
        (torch.bfloat16, 8192, 128256),
    ]:
        logits = (torch.randn(rows, vocabulary, device="cuda") * 4).to(dtype)
        target = torch.randint(0, vocabulary, (rows,), device="cuda")
        trained = logits.clone().requires_grad_()

        def both(f, x=trained, t=target):
            x.grad = None
            f(x, t).backward()

        name = "cross_entropy" if dtype is torch.float32 else "cross_entropy_bf16"
        shape, size = f"{rows}x{vocabulary}", logits.element_size() * logits.numel()
        ce = torch.nn.functional.cross_entropy
        out += [
            (name, shape, size, lambda x=logits, t=target: rust_kernels.cross_entropy(x, t), lambda x=logits, t=target: ce(x, t)),
            (f"{name}+backward", shape, 2 * size, lambda b=both: b(rust_kernels.cross_entropy), lambda b=both: b(ce)),
        ]
    return out


def decode_cases():
    """Decoding attention against SDPA with ``enable_gqa``: 1 or 16 new tokens against a KV cache,
    GQA 32/8 (Llama 3 8B) and 64/8, plain heads, both head dimensions; rated on the KV cache's bytes
    (what must move), against the copy ceiling."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    out = []
    for batch, heads, heads_kv, queries, keys, dim in [
        (1, 32, 8, 1, 4096, 128),
        (1, 32, 8, 1, 32768, 128),
        (1, 64, 8, 1, 131072, 128),
        (8, 32, 8, 1, 32768, 128),
        (16, 32, 8, 1, 8192, 128),
        (4, 32, 8, 16, 16384, 128),
        (8, 32, 32, 1, 4096, 128),
        (8, 32, 8, 1, 16384, 64),
    ]:
        q = torch.randn(batch, heads, queries, dim, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(batch, heads_kv, keys, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        shape = f"b{batch}h{heads}/{heads_kv}q{queries}k{keys}d{dim}"
        out.append(
            (
                "decode",
                shape,
                2 * k.numel() * k.element_size(),
                lambda q=q, k=k, v=v: rust_kernels.attention(q, k, v, enable_gqa=True),
                lambda q=q, k=k, v=v: sdpa(q, k, v, enable_gqa=True),
            )
        )
    return out


def cases():
    """(operator, shape label, bytes or flops, ours, PyTorch's) on shapes that fill the H200."""
    x = torch.rand(8192, 8192, device="cuda")
    odd = torch.rand(8191, 4097, device="cuda")
    rows = torch.rand(65536, 1024, device="cuda")
    # GPT-2's vocabulary: logits rows past a block's registers.
    vocab = torch.randn(4096, 50257, device="cuda")
    # Llama 3's vocabulary: rows past what a block holds on chip.
    llama = torch.randn(2048, 128256, device="cuda")
    a, b = torch.rand(4096, 4096, device="cuda"), torch.rand(4096, 4096, device="cuda")
    # bf16 at 8192³; PyTorch's `@` returns bf16 (cuBLAS rounding its f32 sums), ours f32.
    a16 = torch.rand(8192, 8192, device="cuda").to(torch.bfloat16)
    b16 = torch.rand(8192, 8192, device="cuda").to(torch.bfloat16)
    # f32 at 8192³ on the tensor cores: PyTorch's `@` with TF32 allowed for that call only.
    a32, b32 = torch.rand(8192, 8192, device="cuda"), torch.rand(8192, 8192, device="cuda")

    w5 = torch.rand(5, 5, device="cuda")
    v, v2 = torch.rand(1 << 26, device="cuda"), torch.rand(1 << 26, device="cuda")
    long = torch.rand(1 << 28, device="cuda")
    b8 = torch.randint(0, 256, (1 << 28,), device="cuda", dtype=torch.uint8)
    conv = torch.nn.functional.conv2d
    # Attention, batch 8 × 16 heads, sequence 4096, head dim 128 (the shape); causal counts
    # half the flops, as FlashAttention's and PyTorch's benchmarks do.
    q, k, w = (torch.randn(8, 16, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    attention_flops = 4 * 8 * 16 * 4096**2 * 128
    # Grouped heads as the SDPA anchor: 64 query heads over 8 KV heads, 8192 tokens.
    gq = torch.randn(1, 64, 8192, 128, device="cuda", dtype=torch.bfloat16)
    gk, gv = (torch.randn(1, 8, 8192, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    gqa_flops = 4 * 64 * 8192**2 * 128
    # Forward and backward (2.5× the forward's flops, as FlashAttention's benchmarks count).
    tq, tk, tw = (t.clone().requires_grad_() for t in (q, k, w))
    tg = torch.randn_like(q)

    def backward(f):
        for t in (tq, tk, tw):
            t.grad = None
        f(tq, tk, tw).backward(tg)
    return [
        ("transpose", "8192x8192", 2 * 4 * x.numel(), lambda: rust_kernels.transpose(x), lambda: x.T.contiguous()),
        ("transpose", "8191x4097", 2 * 4 * odd.numel(), lambda: rust_kernels.transpose(odd), lambda: odd.T.contiguous()),
        ("softmax", "65536x1024", 2 * 4 * rows.numel(), lambda: rust_kernels.softmax(rows), lambda: torch.softmax(rows, -1)),
        ("softmax", "4096x50257", 2 * 4 * vocab.numel(), lambda: rust_kernels.softmax(vocab), lambda: torch.softmax(vocab, -1)),
        ("softmax", "2048x128256", 2 * 4 * llama.numel(), lambda: rust_kernels.softmax(llama), lambda: torch.softmax(llama, -1)),
        ("matmul", "4096^3", 2 * 4096**3, lambda: rust_kernels.matmul(a, b), lambda: a @ b),
        ("matmul_tf32", "8192^3", 2 * 8192**3, lambda: rust_kernels.matmul_tf32(a32, b32), lambda: tf32_mm(a32, b32)),
        ("matmul_bf16", "8192^3", 2 * 8192**3, lambda: rust_kernels.matmul_bf16(a16, b16), lambda: a16 @ b16),
        ("attention", "b8h16s4096d128", attention_flops, lambda: rust_kernels.attention(q, k, w), lambda: sdpa(q, k, w)),
        (
            "attention_causal",
            "b8h16s4096d128",
            attention_flops / 2,
            lambda: rust_kernels.attention(q, k, w, causal=True),
            lambda: sdpa(q, k, w, is_causal=True),
        ),
        (
            "attention+backward",
            "b8h16s4096d128",
            3.5 * attention_flops,
            lambda: backward(rust_kernels.attention),
            lambda: backward(sdpa),
        ),
        (
            "attention_gqa",
            "b1h64/8s8192d128",
            gqa_flops,
            lambda: rust_kernels.attention(gq, gk, gv, enable_gqa=True),
            lambda: sdpa(gq, gk, gv, enable_gqa=True),
        ),
        (
            "attention_gqa_causal",
            "b1h64/8s8192d128",
            gqa_flops / 2,
            lambda: rust_kernels.attention(gq, gk, gv, causal=True, enable_gqa=True),
            lambda: sdpa(gq, gk, gv, is_causal=True, enable_gqa=True),
        ),
        (
            "conv2d",
            "8192x8192 5x5",
            2 * 4 * x.numel(),
            lambda: rust_kernels.conv2d(x, w5),
            lambda: conv(x[None, None], w5[None, None], padding=2),
        ),
        ("add", "2^26", 3 * 4 * v.numel(), lambda: rust_kernels.add(v, v2), lambda: v + v2),
        ("sum", "2^28", 4 * long.numel(), lambda: rust_kernels.sum(long), lambda: long.sum()),
        ("histogram", "2^28 bytes", b8.numel(), lambda: rust_kernels.histogram(b8), lambda: torch.bincount(b8, minlength=256)),
        ("cumsum", "2^28", 2 * 4 * long.numel(), lambda: rust_kernels.cumsum(long), lambda: torch.cumsum(long, 0)),
        ("row_sum", "65536x1024", 4 * rows.numel(), lambda: rust_kernels.row_sum(rows), lambda: rows.sum(dim=1)),
        ("row_max", "65536x1024", 4 * rows.numel(), lambda: rust_kernels.row_max(rows), lambda: rows.amax(dim=1)),
    ] + few_rows_cases(long) + [
        (
            "histogram_f32",
            "2^28",
            4 * long.numel(),
            lambda: rust_kernels.histogram_f32(long, 0.0, 1.0),
            lambda: torch.histc(long, 256, 0.0, 1.0),
        ),
    ] + norm_cases() + cross_entropy_cases() + decode_cases()


def few_rows_cases(long):
    """Row reductions over fewer rows than the GPU keeps blocks resident: the split kernels' shapes."""
    cases = []
    for rows in (4, 64, 512):
        x = long.view(rows, -1)
        shape = f"{rows}x2^{(x.shape[1]).bit_length() - 1}"
        cases.append(("row_sum", shape, 4 * x.numel(), lambda x=x: rust_kernels.row_sum(x), lambda x=x: x.sum(dim=1)))
        cases.append(("row_max", shape, 4 * x.numel(), lambda x=x: rust_kernels.row_max(x), lambda x=x: x.amax(dim=1)))
    return cases


def overhead():
    """Per call on a 256-element add, where the GPU work is a few µs: the host's cost."""
    a, b = torch.rand(256, device="cuda"), torch.rand(256, device="cuda")
    out = torch.empty_like(a)
    stream = torch.cuda.current_stream().cuda_stream
    from rust_kernels import operators

    return {
        "rust_kernels.add (eager)": median_us("rust_kernels.add(a, b)", rust_kernels=rust_kernels, a=a, b=b),
        "torch.ops.rust_kernels.add (custom op)": median_us("op(a, b, 'auto')", op=operators._add, a=a, b=b),
        "native.add (output given)": median_us(
            "native.add(a, b, out, stream=s, device=0)", native=native, a=a, b=b, out=out, s=stream
        ),
        "torch.add": median_us("torch.add(a, b)", torch=torch, a=a, b=b),
        "torch.add (output given)": median_us("torch.add(a, b, out=out)", torch=torch, a=a, b=b, out=out),
        # A reduction's call: one launch and one allocation (a zero ticket kept per stream).
        "rust_kernels.sum (eager)": median_us("rust_kernels.sum(a)", rust_kernels=rust_kernels, a=a),
        "torch.sum": median_us("a.sum()", a=a),
    }


def parse_ops(text):
    ops = [o.strip() for o in text.split(",") if o.strip()]
    if not ops:
        raise argparse.ArgumentTypeError(f"--ops takes a comma-separated list of operator names; got {text!r}")
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument(
        "--ops",
        type=parse_ops,
        help="only the operators whose names start with one of these (comma-separated: 'cross_entropy,softmax'); default all",
    )
    parser.add_argument("--no-overhead", action="store_true", help="leave out the per-call figures")
    args = parser.parse_args()
    rows = []
    every = cases()
    if args.ops:
        names = {case[0] for case in every}
        unmatched = [o for o in args.ops if not any(name.startswith(o) for name in names)]
        if unmatched:
            parser.error(f"--ops {','.join(unmatched)}: no such operator; choose from {', '.join(sorted(names))}")
        every = [case for case in every if case[0].startswith(tuple(args.ops))]
    for op, shape, work, ours, theirs in every:
        ours_us = median_us("f()", f=ours)
        theirs_us = median_us("f()", f=theirs)
        unit, scale = ("TFLOP/s", 1e-6) if op.startswith(("matmul", "attention")) else ("GB/s", 1e-3)
        rows.append(
            {
                "op": op,
                "shape": shape,
                "rust_us": ours_us,
                "pytorch_us": theirs_us,
                "speedup": theirs_us / ours_us,
                "unit": unit,
                "rust_rate": work / ours_us * scale,
                "pytorch_rate": work / theirs_us * scale,
            }
        )
        r = rows[-1]
        print(
            f"{op:10} {shape:14} rust {ours_us:9.1f} us ({r['rust_rate']:8.1f} {unit})  "
            f"pytorch {theirs_us:9.1f} us ({r['pytorch_rate']:8.1f} {unit})  rust/pytorch speed {r['speedup']:.3f}"
        )
    calls = {} if args.no_overhead else overhead()
    for name, us in calls.items():
        print(f"per call: {name:32} {us:7.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "ops": rows, "per_call_us": calls}, f, indent=1)


if __name__ == "__main__":
    main()
