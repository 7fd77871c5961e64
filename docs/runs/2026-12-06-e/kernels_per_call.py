"""Which kernels one call launches, and their GPU time, for ours and PyTorch's at given products:
torch.profiler over 20 calls of each (after warm-up), each kernel's name, launches per call and
mean µs. Prints a line per product and side; with a second argument, writes the rows as JSON.

    python3 kernels_per_call.py DTYPE[,DTYPE] [out.json]     (dtype: bf16, bf16-f32, f32, tf32)
"""

import json
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from bench_models import pair

SHAPES = [
    (512, 4096, 4096), (128, 6144, 4096), (512, 10240, 8192), (128, 11008, 4096), (128, 2304, 768),
    (12608, 768, 3072), (128, 3072, 768), (128, 768, 3072), (12608, 768, 768), (512, 4096, 11008),
    (16, 12288, 4096), (1024, 2304, 768), (128, 8192, 8192), (512, 11008, 4096), (1, 4096, 4096),
    (16, 4096, 4096), (2048, 11008, 4096), (8192, 8192, 8192), (16, 10240, 8192), (128, 50257, 768),
    (8192, 8192, 28672),
]
CALLS = 20


def kernels_of(f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            f()
        torch.cuda.synchronize()
    per = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += 1
            per[e.name][1] += e.device_time
    return [(name[:90], n / CALLS, t / n) for name, (n, t) in sorted(per.items(), key=lambda x: -x[1][1])]


def main():
    dtypes = sys.argv[1].split(",")
    rows = []
    torch.manual_seed(1)
    for dtype in dtypes:
        for m, n, k in SHAPES:
            if dtype == "f32" and m * n * k > 1 << 36:
                continue
            a = torch.rand(m, k, device="cuda") * 2 - 1
            b = torch.rand(k, n, device="cuda") * 2 - 1
            if dtype.startswith("bf16"):
                a, b = a.bfloat16(), b.bfloat16()
            ours, theirs = pair(dtype, a, b)
            for side, f in (("ours", ours), ("torch", theirs)):
                ks = kernels_of(f)
                total = sum(c * t for _, c, t in ks)
                print(f"{dtype:8} {m:6}x{n:6}x{k:6} {side:5} {total:9.1f} us  " + " | ".join(f"{nm} x{c:g} {t:.1f}" for nm, c, t in ks), flush=True)
                rows.append({"dtype": dtype, "m": m, "n": n, "k": k, "side": side, "gpu_us": total, "kernels": ks})
            del a, b
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
