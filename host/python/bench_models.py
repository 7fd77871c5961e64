"""The matrix products of real models (benches/shapes/models.json) through the operators against
PyTorch's own, in one process: f32 (`rust_kernels.matmul` against `a @ b`), TF32
(`rust_kernels.matmul_tf32` against `a @ b` with TF32 allowed), bf16 (`rust_kernels.matmul_bf16`
with bf16 out against `a @ b` on bf16 tensors) and bf16-f32 (`rust_kernels.matmul_bf16`, f32 out,
against `torch.mm(a, b, out_dtype=torch.float32)`, or `a @ b` where PyTorch lacks it). Each shape
once, however many models use it;
each product checked against the f64 product of the operands as the kernels read them, then timed
with CUDA events (three warm-up calls, then rounds that take ours and PyTorch's in turn, the median
of every call). Prints a table and each dtype's geometric mean and worst shape; with --json FILE,
writes the figures (whole or not at all). Run on a GPU with the wheel on PYTHONPATH:

    python3 host/python/bench_models.py [--dtypes f32,tf32,bf16,bf16-f32] [--tokens 1,16] [--json FILE]
"""

import argparse
import json
import math
import os
import sys
from pathlib import Path

DTYPES = ("f32", "tf32", "bf16", "bf16-f32")


def shapes_file():
    """The suite: beside this script in the runner's bundle, else in the repository."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "model_shapes.json", here.parents[1] / "benches" / "shapes" / "models.json"):
        if candidate.is_file():
            return candidate
    return None


def load_shapes(path):
    """The suite's distinct (m, n, k), each with the model layers that use it, in file order."""
    with open(path) as f:
        suite = json.load(f)
    shapes = {}
    for model in suite["models"]:
        for layer in model["layers"]:
            for tokens in layer.get("tokens", model["tokens"]):
                key = (tokens, layer["n"], layer["k"])
                if not all(isinstance(x, int) and 1 <= x < 1 << 31 for x in key):
                    raise ValueError(f"{model['name']} {layer['name']}: m, n, k must be positive 32-bit integers, got {key}")
                shapes.setdefault(key, []).append(f"{model['name']} {layer['name']} ×{tokens}")
    return shapes


def parse_dtypes(text):
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown or not dtypes:
        raise argparse.ArgumentTypeError(f"--dtypes takes a comma-separated list of {', '.join(DTYPES)}; got {text!r}")
    return dtypes


def parse_tokens(text):
    try:
        tokens = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tokens takes a comma-separated list of token counts (m); got {text!r}")
    if not tokens:
        raise argparse.ArgumentTypeError("--tokens: give at least one token count")
    return tokens


def pair(dtype, a, b, summed_out=True):
    """Ours and PyTorch's product of `a` and `b` in `dtype`'s terms, as two calls; `summed_out`:
    whether PyTorch has `torch.mm(..., out_dtype=torch.float32)`, bf16-f32's baseline (else
    `a @ b`)."""
    import torch

    import rust_kernels
    from bench_torch import tf32_mm

    if dtype == "f32":
        return (lambda: rust_kernels.matmul(a, b)), (lambda: a @ b)
    if dtype == "tf32":
        return (lambda: rust_kernels.matmul_tf32(a, b)), (lambda: tf32_mm(a, b))
    if dtype == "bf16":
        return (lambda: rust_kernels.matmul_bf16(a, b, out_dtype=torch.bfloat16)), (lambda: a @ b)
    if summed_out:
        return (lambda: rust_kernels.matmul_bf16(a, b)), (lambda: torch.mm(a, b, out_dtype=torch.float32))
    return (lambda: rust_kernels.matmul_bf16(a, b)), (lambda: a @ b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", type=parse_dtypes, default=list(DTYPES), help="of f32, tf32, bf16, bf16-f32 (default: all)")
    parser.add_argument("--shapes", type=Path, default=None, help="the suite (default: benches/shapes/models.json)")
    parser.add_argument("--tokens", type=parse_tokens, default=None, help="only the products of these token counts (m), e.g. 1,16 (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    path = args.shapes or shapes_file()
    if path is None or not path.is_file():
        parser.error(f"--shapes: no suite at {path or 'benches/shapes/models.json'}; give the file's path")
    if args.json is not None and not args.json.parent.is_dir():
        parser.error(f"--json: the folder {args.json.parent} does not exist")
    try:
        shapes = load_shapes(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        parser.error(f"--shapes: {path} is not a model-shape suite ({e!r})")
    if args.tokens is not None:
        suite_tokens = sorted({m for m, _, _ in shapes})
        missing = [t for t in args.tokens if t not in suite_tokens]
        if missing:
            parser.error(f"--tokens: no product of the suite has {missing[0]} tokens; give some of {', '.join(map(str, suite_tokens))}")
        shapes = {key: uses for key, uses in shapes.items() if key[0] in args.tokens}

    import torch

    import rust_kernels  # noqa: F401 (loaded here: a missing wheel fails before any work)
    from timing import time_both

    if not torch.cuda.is_available():
        print("bench_models.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(2026)

    def operands(dtype, m, n, k):
        a = torch.rand(m, k, device="cuda") * 2 - 1
        b = torch.rand(k, n, device="cuda") * 2 - 1
        if dtype.startswith("bf16"):
            return a.to(torch.bfloat16), b.to(torch.bfloat16)
        return a, b

    def as_read(dtype, x):
        """The operand as the kernels read it, in f64: TF32 keeps the top 10 mantissa bits."""
        if dtype == "tf32":
            x = (x.view(torch.int32) & ~0x1FFF).view(torch.float32)
        return x.double()

    # PyTorch's bf16 product with f32 output, where it has one (2.8 on): the baseline of bf16-f32.
    try:
        one = torch.ones(1, 1, device="cuda", dtype=torch.bfloat16)
        summed_out = torch.mm(one, one, out_dtype=torch.float32).dtype == torch.float32
    except (TypeError, RuntimeError):
        summed_out = False
    bf16_f32_baseline = "torch.mm(a, b, out_dtype=torch.float32)" if summed_out else "a @ b (bf16 out)"
    if "bf16-f32" in args.dtypes:
        print(f"bf16-f32 against {bf16_f32_baseline}")

    # bf16 C: one more rounding, within 2^-8 of |a·b| ≤ the sum of |a_ik·b_kj|.
    def rounding(dtype):
        return 2.0**-8 if dtype == "bf16" else 0.0

    # Error of ours against the f64 product of the operands as read, relative to the sum of
    # |a_ik·b_kj|: every product is exact in f32 for TF32 and bf16 operands and within one rounding
    # for f32, and a k-term f32 sum in any order is within (k + 1)·u of that sum (u = 2^-24).
    def bound(k):
        return (k + 1) * 2.0**-24
    rows = []
    for dtype in args.dtypes:
        for (m, n, k), uses in shapes.items():
            a, b = operands(dtype, m, n, k)
            ours, theirs = pair(dtype, a, b, summed_out)
            got = ours().double()
            wide_a, wide_b = as_read(dtype, a), as_read(dtype, b)
            want = wide_a @ wide_b
            scale = wide_a.abs() @ wide_b.abs()
            error = ((got - want).abs() / scale.clamp_min(1e-30)).max().item()
            del got, want, scale, wide_a, wide_b
            ours_us, theirs_us = time_both(ours, theirs)
            flops = 2 * m * n * k
            row = {
                "dtype": dtype,
                "m": m,
                "n": n,
                "k": k,
                "uses": uses,
                "rust_us": ours_us,
                "pytorch_us": theirs_us,
                "speed": theirs_us / ours_us,
                "rust_tflops": flops / ours_us * 1e-6,
                "pytorch_tflops": flops / theirs_us * 1e-6,
                "error": error,
                "checked": error <= bound(k) + rounding(dtype),
            }
            rows.append(row)
            print(
                f"{dtype:4} {m:6} x {n:6} x {k:6}  rust {ours_us:10.1f} us ({row['rust_tflops']:7.1f} TFLOP/s)  "
                f"pytorch {theirs_us:10.1f} us ({row['pytorch_tflops']:7.1f})  speed {row['speed']:.3f}  "
                f"error {error:.1e}{'' if row['checked'] else ' FAILED'}  {uses[0]}{' …' if len(uses) > 1 else ''}",
                flush=True,
            )
            del a, b
            torch.cuda.empty_cache()
    summary = {}
    for dtype in args.dtypes:
        mine = [r for r in rows if r["dtype"] == dtype]
        worst = min(mine, key=lambda r: r["speed"])
        summary[dtype] = {
            "shapes": len(mine),
            "geomean_speed": math.exp(sum(math.log(r["speed"]) for r in mine) / len(mine)),
            "worst_speed": worst["speed"],
            "worst_shape": [worst["m"], worst["n"], worst["k"]],
            "below_0_85": sum(r["speed"] < 0.85 for r in mine),
        }
        s = summary[dtype]
        print(
            f"{dtype}: {s['shapes']} shapes, geomean {s['geomean_speed']:.3f}× PyTorch, worst {s['worst_speed']:.3f}× "
            f"at {' x '.join(map(str, s['worst_shape']))}, {s['below_0_85']} below 0.85×"
        )
    failed = [r for r in rows if not r["checked"]]
    if args.json is not None:
        result = {
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "suite": str(path),
            "bf16_f32_baseline": bf16_f32_baseline,
            "summary": summary,
            "products": rows,
        }
        partial = args.json.with_name(args.json.name + ".partial")
        with open(partial, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(partial, args.json)
    if failed:
        print(f"{len(failed)} products outside their error bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
