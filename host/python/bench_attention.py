"""Attention at the shapes public models run, through `rust_kernels.attention` against PyTorch's
`scaled_dot_product_attention` in one process: prefill (causal decoders with grouped heads,
non-causal encoders; 512 to 16384 tokens), decoding (1 or 16 new tokens against a KV cache), and
with --backward the forward and backward of training. Each case is checked against SDPA's output
(a sanity check: the kernels' bounds are the tests'), then timed with CUDA events in rounds that
take ours and SDPA's in turn, the median of every call. Prints a table and each part's geometric
mean and worst case; with --json FILE writes the figures (whole or not at all). Run on a GPU with
the wheel on PYTHONPATH:

    python3 host/python/bench_attention.py [--parts prefill,decode] [--backward] [--json FILE]
"""

import argparse
import math
import json
import os
import sys
from pathlib import Path

# (model, heads, KV heads, head dim, causal): from the models' published configurations.
MODELS = [
    ("Llama-3-8B", 32, 8, 128, True),
    ("Llama-3-70B", 64, 8, 128, True),
    ("Qwen2-7B", 28, 4, 128, True),
    ("GPT-2", 12, 12, 64, True),
    ("BERT-base", 12, 12, 64, False),
    ("ViT-L/16", 16, 16, 64, False),
]
# Sequence lengths of the prefill part, and the tokens per batch they are run at.
PREFILL_SEQS = (512, 2048, 8192, 16384)
PREFILL_TOKENS = 16384
# (model, batch, new tokens, cached keys) of the decoding part.
DECODE = [
    ("Llama-3-8B", 1, 1, 4096),
    ("Llama-3-8B", 1, 1, 32768),
    ("Llama-3-8B", 8, 1, 32768),
    ("Llama-3-8B", 16, 1, 8192),
    ("Llama-3-8B", 4, 16, 16384),
    ("Llama-3-70B", 1, 1, 131072),
    ("Qwen2-7B", 8, 1, 16384),
    ("GPT-2", 16, 1, 1024),
]
PARTS = ("prefill", "decode")


def parse_parts(text):
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or any(p not in PARTS for p in parts):
        raise argparse.ArgumentTypeError(f"--parts takes a comma-separated list of {', '.join(PARTS)}; got {text!r}")
    return parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=parse_parts, default=list(PARTS), help="of prefill, decode (default: both)")
    parser.add_argument("--backward", action="store_true", help="time the prefill's forward and backward too")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.json is not None and not args.json.parent.is_dir():
        parser.error(f"--json: the folder {args.json.parent} does not exist")

    import torch

    import rust_kernels
    from timing import time_both

    if not torch.cuda.is_available():
        print("bench_attention.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(2026)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    config = {name: (heads, kv, dim, causal) for name, heads, kv, dim, causal in MODELS}

    cases = []
    if "prefill" in args.parts:
        for name, heads, kv, dim, causal in MODELS:
            for seq in PREFILL_SEQS:
                batch = max(1, PREFILL_TOKENS // seq)
                flops = 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
                kinds = ["forward"] + (["forward+backward"] if args.backward else [])
                for kind in kinds:
                    cases.append(("prefill", kind, name, batch, heads, kv, dim, causal, seq, seq, flops * (3.5 if kind != "forward" else 1)))
    if "decode" in args.parts:
        for name, batch, queries, keys in DECODE:
            heads, kv, dim, _ = config[name]
            cases.append(("decode", "forward", name, batch, heads, kv, dim, False, queries, keys, None))
    rows = []
    for part, kind, name, batch, heads, kv, dim, causal, queries, keys, flops in cases:
        q = torch.randn(batch, heads, queries, dim, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(batch, kv, keys, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        gqa = heads != kv
        ours_f = lambda q, k, v: rust_kernels.attention(q, k, v, causal=causal, enable_gqa=gqa)
        theirs_f = lambda q, k, v: sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)
        got, want = ours_f(q, k, v).float(), theirs_f(q, k, v).float()
        checked = bool(((got - want).abs() <= 0.02 * want.abs() + 0.02).all())
        del got, want
        if kind == "forward":
            ours, theirs = (lambda: ours_f(q, k, v)), (lambda: theirs_f(q, k, v))
        else:
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            grad = torch.randn_like(q)

            def both(f, leaves=leaves, grad=grad):
                for t in leaves:
                    t.grad = None
                f(*leaves).backward(grad)

            ours, theirs = (lambda: both(ours_f)), (lambda: both(theirs_f))
        ours_us, theirs_us = time_both(ours, theirs)
        kv_bytes = 2 * k.numel() * k.element_size()
        rate = (lambda us: flops / us * 1e-6) if flops else (lambda us: kv_bytes / us * 1e-3)
        unit = "TFLOP/s" if flops else "GB/s of K and V"
        row = {
            "part": part,
            "kind": kind,
            "model": name,
            "shape": [batch, heads, kv, queries, keys, dim],
            "causal": causal,
            "rust_us": ours_us,
            "pytorch_us": theirs_us,
            "speed": theirs_us / ours_us,
            "unit": unit,
            "rust_rate": rate(ours_us),
            "pytorch_rate": rate(theirs_us),
            "checked": checked,
        }
        rows.append(row)
        print(
            f"{part:7} {kind:16} {name:11} b{batch} h{heads}/{kv} q{queries} k{keys} d{dim}{' causal' if causal else ''}: "
            f"rust {ours_us:9.1f} us ({row['rust_rate']:7.1f} {unit})  sdpa {theirs_us:9.1f} us "
            f"({row['pytorch_rate']:7.1f})  speed {row['speed']:.3f}{'' if checked else '  DIFFERS FROM SDPA'}",
            flush=True,
        )
        del q, k, v
        torch.cuda.empty_cache()
    summary = {}
    for key in sorted({(r["part"], r["kind"]) for r in rows}):
        mine = [r for r in rows if (r["part"], r["kind"]) == key]
        worst = min(mine, key=lambda r: r["speed"])
        summary[" ".join(key)] = {
            "cases": len(mine),
            "geomean_speed": math.exp(sum(math.log(r["speed"]) for r in mine) / len(mine)),
            "worst_speed": worst["speed"],
            "worst": f"{worst['model']} {worst['shape']}",
        }
        s = summary[" ".join(key)]
        print(f"{' '.join(key)}: {s['cases']} cases, geomean {s['geomean_speed']:.3f}× SDPA, worst {s['worst_speed']:.3f}× ({s['worst']})")
    if args.json is not None:
        result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "summary": summary, "cases": rows}
        partial = args.json.with_name(args.json.name + ".partial")
        with open(partial, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(partial, args.json)
    failed = [r for r in rows if not r["checked"]]
    if failed:
        print(f"{len(failed)} cases differ from SDPA", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
