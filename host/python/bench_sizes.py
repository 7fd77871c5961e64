"""The reductions, scans and row operators at every size against PyTorch's own, in one process:
`sum` and `cumsum` over n from 2^10 to 2^30 (each power of two and an odd size between), and
`row_sum`, `row_max` and `softmax` over widths from 1 to 256k columns at 2^16, 2^20, 2^24 and 2^28
elements (float32). Each point checked against PyTorch's result first (the bounds of the operators'
tests), then timed with CUDA events (three warm-up calls, then rounds that take ours and PyTorch's
in turn, the median of every call). Prints a line per point and each operator's summary over the
issue's domain (from 2^16 elements, widths from 32); with --json FILE, writes the figures (whole or
not at all) for `cargo xtask bench-report --sizes FILE`, which plots them. Run on a GPU with the
wheel on PYTHONPATH:

    python3 host/python/bench_sizes.py [--ops sum,cumsum,row_sum,row_max,softmax] [--max-log2 30] [--json FILE]
"""

import argparse
import json
import math
import os
import sys

OPS = ("sum", "cumsum", "row_sum", "row_max", "softmax")
# Row widths: powers of two, and the widths models use (hidden sizes, vocabularies).
WIDTHS = [1 << k for k in range(0, 19)] + [768, 4095, 50_257, 128_256]
ROW_TOTALS_LOG2 = (16, 20, 24, 28)
# The domain: from 2^16 elements, widths from 32 columns.
DOMAIN_ELEMENTS, DOMAIN_WIDTH = 1 << 16, 32


def parse_ops(text):
    ops = [o.strip() for o in text.split(",") if o.strip()]
    unknown = [o for o in ops if o not in OPS]
    if unknown or not ops:
        raise argparse.ArgumentTypeError(f"--ops takes a comma-separated list of {', '.join(OPS)}; got {text!r}")
    return ops


def parse_max_log2(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--max-log2 takes a whole number from 10 to 30; got {text!r}")
    if not 10 <= value <= 30:
        raise argparse.ArgumentTypeError(f"--max-log2 takes a whole number from 10 to 30; got {value}")
    return value


def whole_sizes(max_log2):
    """Powers of two from 2^10, and between each two an odd size (3·2^(k-1) + 1)."""
    sizes = []
    for k in range(10, max_log2 + 1):
        sizes.append(1 << k)
        if k < max_log2:
            sizes.append(3 * (1 << (k - 1)) + 1)
    return sizes


def row_shapes(max_log2):
    """(rows, cols) for each total and width where the width fits the total."""
    shapes = []
    for total_log2 in ROW_TOTALS_LOG2:
        if total_log2 > max_log2:
            continue
        for cols in sorted(set(WIDTHS)):
            rows = (1 << total_log2) // cols
            if rows >= 1:
                shapes.append((rows, cols))
    return shapes


def points(ops, max_log2):
    for op in ops:
        if op in ("sum", "cumsum"):
            for n in whole_sizes(max_log2):
                yield op, 1, n
        else:
            for rows, cols in row_shapes(max_log2):
                yield op, rows, cols


def case(torch, rust_kernels, op, rows, cols):
    """(ours, PyTorch's, check): the two calls on one input, and the check of ours against PyTorch's."""
    generator = torch.Generator(device="cuda").manual_seed(rows * 7919 + cols)
    # Multiples of 2^-7 in [-1, 1): sums of fewer than 2^17 of them are exact in any order.
    x = torch.randint(-128, 128, (rows * cols,), device="cuda", dtype=torch.int16, generator=generator).float() / 128
    u = 2.0**-24
    if op == "sum":
        bound = (cols / 1024 + 64) * u * float(x.abs().double().sum())
        return (
            lambda: rust_kernels.sum(x),
            lambda: x.sum(),
            lambda: abs(float(rust_kernels.sum(x)) - float(x.double().sum())) <= bound,
        )
    if op == "cumsum":
        def check():
            want = torch.cumsum(x.double(), 0)
            bound = (cols / 256 + 64) * u * torch.cumsum(x.double().abs(), 0)
            return bool(((rust_kernels.cumsum(x).double() - want).abs() <= bound).all())

        return lambda: rust_kernels.cumsum(x), lambda: torch.cumsum(x, 0), check
    m = x.view(rows, cols)
    if op == "row_sum":
        def check():
            bound = (cols + 1) * u * m.double().abs().sum(dim=1)
            return bool(((rust_kernels.row_sum(m).double() - m.double().sum(dim=1)).abs() <= bound).all())

        return lambda: rust_kernels.row_sum(m), lambda: m.sum(dim=1), check
    if op == "row_max":
        return (
            lambda: rust_kernels.row_max(m),
            lambda: m.amax(dim=1),
            lambda: torch.equal(rust_kernels.row_max(m), m.amax(dim=1)),
        )

    def check():
        want = torch.softmax(m.double(), dim=1)
        # The tests' bound (test_torch.softmax_bound): each e^x within |x - max|·2u, the row's sum
        # within its chain of additions · 9u, 10u for the rest.
        share = max(-(-cols // 256), -(-min(cols, 1024) // 32))
        below_max = m.double().amax(dim=1, keepdim=True) - m.double()
        bound = want * ((share + 40) * 9 * u + below_max * 2 * u + 10 * u) + torch.finfo(torch.float32).tiny
        return bool(((rust_kernels.softmax(m).double() - want).abs() <= bound).all())

    return lambda: rust_kernels.softmax(m), lambda: torch.softmax(m, dim=1), check


def summary(rows):
    """Per operator, over the issue's domain: points, geometric mean, worst point, points below 1.00×."""
    result = {}
    for op in dict.fromkeys(r["op"] for r in rows):
        domain = [
            r
            for r in rows
            if r["op"] == op and r["rows"] * r["cols"] >= DOMAIN_ELEMENTS and (r["rows"] == 1 or r["cols"] >= DOMAIN_WIDTH)
        ]
        if not domain:
            continue
        worst = min(domain, key=lambda r: r["speed"])
        result[op] = {
            "points": len(domain),
            "geomean_speed": math.exp(sum(math.log(r["speed"]) for r in domain) / len(domain)),
            "worst_speed": worst["speed"],
            "worst_shape": [worst["rows"], worst["cols"]],
            "below_1": sum(r["speed"] < 1.0 for r in domain),
        }
    return result


def write_whole(path, value):
    """`value` as JSON at `path`, whole or not at all (a temporary beside it, then a rename)."""
    temporary = f"{path}.partial"
    with open(temporary, "w") as f:
        json.dump(value, f, indent=1)
    os.replace(temporary, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=parse_ops, default=list(OPS), help=f"which of {', '.join(OPS)} (default: all)")
    parser.add_argument("--max-log2", type=parse_max_log2, default=30, help="the largest size, 2^N elements (10–30, default 30)")
    parser.add_argument("--json", help="write the figures here (a new file, or one this script wrote)")
    args = parser.parse_args()
    if args.json and os.path.exists(args.json):
        try:
            with open(args.json) as f:
                mine = "size_points" in json.load(f)
        except (OSError, ValueError):
            mine = False
        if not mine:
            parser.error(f"--json {args.json}: the file exists and is not this script's; name a new file")

    import torch

    import rust_kernels
    from timing import time_both

    if not torch.cuda.is_available():
        sys.exit("bench_sizes.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    rows = []
    planned = list(points(args.ops, args.max_log2))
    for i, (op, r, c) in enumerate(planned, 1):
        ours, theirs, check = case(torch, rust_kernels, op, r, c)
        checked = bool(check())
        ours_us, theirs_us = time_both(ours, theirs)
        rows.append(
            {
                "op": op,
                "rows": r,
                "cols": c,
                "rust_us": ours_us,
                "pytorch_us": theirs_us,
                "speed": theirs_us / ours_us,
                "checked": checked,
            }
        )
        shape = f"{c}" if op in ("sum", "cumsum") else f"{r}x{c}"
        mark = "" if checked else "  WRONG: outside the bound"
        print(f"[{i}/{len(planned)}] {op:8} {shape:>14} rust {ours_us:9.1f} us  pytorch {theirs_us:9.1f} us  speed {theirs_us / ours_us:.3f}{mark}", flush=True)
        del ours, theirs, check
        torch.cuda.empty_cache()
    totals = summary(rows)
    for op, s in totals.items():
        print(
            f"{op:8} from 2^16 (widths from 32): {s['points']} points, geomean {s['geomean_speed']:.3f}x, "
            f"worst {s['worst_speed']:.3f}x at {s['worst_shape'][0]}x{s['worst_shape'][1]}, {s['below_1']} below 1.00x"
        )
    wrong = [r for r in rows if not r["checked"]]
    if args.json:
        write_whole(
            args.json,
            {
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "summary": totals,
                "size_points": rows,
            },
        )
    if wrong:
        sys.exit(f"{len(wrong)} points outside their bound (marked WRONG above)")


if __name__ == "__main__":
    main()
