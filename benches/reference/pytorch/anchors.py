"""PyTorch's own operations on the shapes the Rust benches run, timed the same way (CUDA events,
warm-up, median, inputs rotated past the L2), written as bench cases (JSON, one list) that the
benches merge into their results as library baselines beside Rust and CUDA C.

Run by the GPU bundle's run.sh (`python3 anchors.py > OUT/pytorch.json`); PyTorch is the runner's,
not a project dependency. TF32 is off, so that convolutions compute in FP32 like the Rust kernels.
"""

import json
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size
WARMUP_MS = 50.0
RUNS = 50


def input_sets(set_bytes):
    """Enough copies that one pass over them is four times the L2, at most 32 (as the benches)."""
    return max(1, min(32, math.ceil(4 * L2_BYTES / set_bytes)))


def median_ms(run, sets):
    """Warm up for WARMUP_MS of GPU time, then the median of RUNS runs, each between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm, i = 0.0, 0
    while warm < WARMUP_MS:
        start.record()
        run(i % sets)
        end.record()
        end.synchronize()
        warm += start.elapsed_time(end)
        i += 1
    times = []
    for i in range(RUNS):
        start.record()
        run(i % sets)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def case(family, kernel, size, x, bytes_, flops, ms, sets):
    return {
        "family": family,
        "bound": "memory",
        "kernel": kernel,
        "source": None,
        "size": size,
        "x": float(x),
        "bytes": float(bytes_),
        "flops": float(flops),
        "median_ms": ms,
        "rate": bytes_ / (ms * 1e-3) / 1e9,
        "percent_of_ceiling": None,
        "kernel_ms": None,
        "input_sets": sets,
    }


def transposes():
    for rows, cols in [(4096, 4096), (8192, 8192), (16384, 16384), (8191, 4097)]:
        elements = rows * cols
        sets = input_sets(8 * elements)
        inputs = [torch.randn(rows, cols, device="cuda") for _ in range(sets)]
        ms = median_ms(lambda i: inputs[i].t().contiguous(), sets)
        yield case("transpose", "torch_transpose", f"{rows}x{cols}", elements, 8 * elements, 0, ms, sets)
        del inputs


def convolutions():
    for height, width, side in [(4096, 4096, 5), (8192, 8192, 3), (8192, 8192, 5), (8192, 8192, 7)]:
        pixels = height * width
        sets = input_sets(8 * pixels)
        images = [torch.randn(1, 1, height, width, device="cuda") for _ in range(sets)]
        weight = torch.randn(1, 1, side, side, device="cuda")
        ms = median_ms(lambda i: F.conv2d(images[i], weight, padding=side // 2), sets)
        size = f"{height}x{width}, {side}x{side}"
        yield case("conv2d", "torch_conv2d", size, pixels, 8 * pixels, 2 * side * side * pixels, ms, sets)
        del images


def reductions():
    for k in [20, 22, 24, 26, 28, 30]:
        n = 1 << k
        sets = input_sets(4 * n)
        inputs = [torch.rand(n, device="cuda") * 2 - 1 for _ in range(sets)]
        ms = median_ms(lambda i: inputs[i].sum(), sets)
        yield case("reduce", "torch_sum", f"n={n}", n, 4 * n, n, ms, sets)
        if k >= 24:
            ms = median_ms(lambda i: inputs[i].max(), sets)
            yield case("reduce_max", "torch_max", f"n={n}", n, 4 * n, 0, ms, sets)
        del inputs


def scans():
    """`cumsum` (inclusive) on the scan bench sizes."""
    for k in [20, 22, 24, 26, 28, 30]:
        n = 1 << k
        sets = input_sets(8 * n)
        inputs = [torch.rand(n, device="cuda") * 2 - 1 for _ in range(sets)]
        ms = median_ms(lambda i: torch.cumsum(inputs[i], 0), sets)
        yield case("scan", "torch_cumsum", f"n={n}, inclusive", n, 8 * n, n, ms, sets)
        del inputs


def scans_i32():
    """`cumsum` of int32 kept in int32 (inclusive) on the i32 scan bench sizes."""
    for k in [20, 22, 24, 26, 28, 30]:
        n = 1 << k
        sets = input_sets(8 * n)
        inputs = [torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device="cuda") for _ in range(sets)]
        ms = median_ms(lambda i: torch.cumsum(inputs[i], 0, dtype=torch.int32), sets)
        yield case("scan_i32", "torch_cumsum_i32", f"n={n}, inclusive", n, 8 * n, n, ms, sets)
        del inputs


def softmaxes():
    """`softmax(dim=1)` on 2^26-element matrices of rows from 256 to 32768 long."""
    for cols in [256, 1024, 4096, 8192, 16384, 32768]:
        rows = (1 << 26) // cols
        sets = input_sets(8 * rows * cols)
        inputs = [torch.rand(rows, cols, device="cuda") * 140 - 40 for _ in range(sets)]
        ms = median_ms(lambda i: torch.softmax(inputs[i], dim=1), sets)
        yield case("softmax", "torch_softmax", f"{rows} rows of {cols}", cols, 8 * rows * cols, 0, ms, sets)
        del inputs


def row_reductions():
    """`sum(dim=1)` and `amax(dim=1)` on the row-reduction bench shapes."""
    for cols in [32, 256, 1024, 8192, 32768]:
        rows = (1 << 26) // cols
        sets = input_sets(4 * rows * cols)
        inputs = [torch.rand(rows, cols, device="cuda") * 2 - 1 for _ in range(sets)]
        size = f"{rows} rows of {cols}"
        bytes_ = 4 * (rows * cols + rows)
        ms = median_ms(lambda i: inputs[i].sum(dim=1), sets)
        yield case("row_sum", "torch_sum_rows", size, cols, bytes_, rows * cols, ms, sets)
        ms = median_ms(lambda i: inputs[i].amax(dim=1), sets)
        yield case("row_max", "torch_amax_rows", size, cols, bytes_, rows * cols, ms, sets)
        del inputs


def histograms():
    """`bincount` over bytes, uniform or with half of them the value 200 (as the Rust benches)."""
    for k in [24, 26, 28, 30]:
        for skew in [0, 50]:
            n = 1 << k
            sets = input_sets(n)

            def make():
                x = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda")
                if skew:
                    x[torch.rand(n, device="cuda") < skew / 100] = 200
                return x

            inputs = [make() for _ in range(sets)]
            try:
                ms = median_ms(lambda i: torch.bincount(inputs[i], minlength=256), sets)
            except RuntimeError as e:
                print(f"torch_bincount n={n}: skipped ({e})", file=sys.stderr)
                return
            yield case("histogram", "torch_bincount", f"n={n}, {skew}% one value", n, n, 0, ms, sets)
            del inputs


def histograms_f32():
    """`histc` with 256 bins over [-1, 1] of f32 samples uniform over [-1.25, 1.25), or with half
    of them 0.3 (as the Rust benches)."""
    for k in [22, 24, 26, 28]:
        for skew in [0, 50]:
            n = 1 << k
            sets = input_sets(4 * n)

            def make():
                x = (torch.rand(n, device="cuda") * 2.5 - 1.25).float()
                if skew:
                    x[torch.rand(n, device="cuda") < skew / 100] = 0.3
                return x

            inputs = [make() for _ in range(sets)]
            ms = median_ms(lambda i: torch.histc(inputs[i], bins=256, min=-1.0, max=1.0), sets)
            yield case("histogram_f32", "torch_histc", f"n={n}, {skew}% one value", n, 4 * n, 0, ms, sets)
            del inputs


def attentions():
    """`scaled_dot_product_attention` in bf16 at the attention families' bench sizes (heads = batch ×
    heads, seq, dim), with and without the causal mask; compute-bound cases in TFLOP/s (causal
    counting half the flops, as the Rust side does)."""
    for heads, seq, dim in [(512, 1024, 128), (256, 2048, 128), (128, 4096, 128), (32, 8192, 128)]:
        shape = (heads // 16, 16, seq, dim) if heads % 16 == 0 else (1, heads, seq, dim)
        tensor = 2 * heads * seq * dim
        sets = input_sets(3 * tensor)
        inputs = [[torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3)] for _ in range(sets)]
        for family, causal in [("attention", False), ("attention_causal", True)]:
            flops = 4 * heads * seq * seq * dim / (2 if causal else 1)
            ms = median_ms(lambda i: F.scaled_dot_product_attention(*inputs[i], is_causal=causal), sets)
            c = case(family, "torch_sdpa", f"{heads}x{seq}x{dim}", seq, 4 * tensor, flops, ms, sets)
            c.update(bound="compute", rate=flops / (ms * 1e-3) / 1e12)
            yield c
        del inputs


# The backward families by mask: each family's bench case times a whole pass (its own launch with
# the others of its pass), so SDPA's backward is every one's library baseline.
BACKWARD_FAMILIES = {
    False: [
        "attention_backward",
        "attention_backward_query_saved",
        "attention_backward_keys",
        "attention_backward_statistics",
        "attention_backward_statistics_wgmma",
        "attention_backward_wgmma",
        "attention_backward_delta",
        "attention_backward_finish",
    ],
    True: [
        "attention_backward_causal",
        "attention_backward_query_saved_causal",
        "attention_backward_keys_causal",
        "attention_backward_statistics_causal",
        "attention_backward_statistics_wgmma_causal",
        "attention_backward_wgmma_causal",
    ],
}


def attention_backwards():
    """`scaled_dot_product_attention`'s backward in bf16 (dQ, dK and dV from a kept graph by
    `torch.autograd.grad`) at the backward families' bench sizes (heads = batch × heads, seq, dim),
    with and without the causal mask; TFLOP/s by FlashAttention's count, 2.5× the forward's (causal
    half), and bytes as the Rust side counts them (eight bf16 tensors)."""
    for heads, seq, dim in [(128, 4096, 128), (32, 8192, 128), (256, 2048, 64)]:
        shape = (heads // 16, 16, seq, dim)
        tensor = 2 * heads * seq * dim
        sets = input_sets(5 * tensor)
        for causal in (False, True):
            inputs = []
            for _ in range(sets):
                q, k, v = (
                    torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
                )
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                inputs.append((o, (q, k, v), torch.randn_like(o)))
            ms = median_ms(
                lambda i: torch.autograd.grad(inputs[i][0], inputs[i][1], inputs[i][2], retain_graph=True), sets
            )
            flops = 2.5 * 4 * heads * seq * seq * dim / (2 if causal else 1)
            for family in BACKWARD_FAMILIES[causal]:
                c = case(family, "torch_sdpa_backward", f"{heads}x{seq}x{dim}", seq, 8 * tensor, flops, ms, sets)
                c.update(bound="compute", rate=flops / (ms * 1e-3) / 1e12)
                yield c
            del inputs


# Each generator with the families it times, so that BENCH_FAMILIES (as the Rust benches read it)
# limits the anchors too.
GENERATORS = [
    (transposes, {"transpose"}),
    (convolutions, {"conv2d"}),
    (reductions, {"reduce", "reduce_max"}),
    (histograms, {"histogram"}),
    (histograms_f32, {"histogram_f32"}),
    (scans, {"scan"}),
    (scans_i32, {"scan_i32"}),
    (softmaxes, {"softmax"}),
    (row_reductions, {"row_sum", "row_max"}),
    (attentions, {"attention", "attention_causal"}),
    (attention_backwards, set(BACKWARD_FAMILIES[False] + BACKWARD_FAMILIES[True])),
]


def main():
    wanted = os.environ.get("BENCH_FAMILIES")
    wanted = None if not wanted else {name.strip() for name in wanted.split(",")}
    cases = []
    for generator, families in GENERATORS:
        if wanted is None or families & wanted:
            cases += [c for c in generator() if wanted is None or c["family"] in wanted]
    json.dump(cases, sys.stdout, indent=1)
    for c in cases:
        unit = "TFLOP/s" if c["bound"] == "compute" else "GB/s"
        print(f"{c['kernel']} {c['size']}: {c['median_ms']:.4f} ms, {c['rate']:.1f} {unit}", file=sys.stderr)


if __name__ == "__main__":
    main()
