"""Run bd: why PyTorch's softmax at 65536 x 1024 measured 1145 GB/s in the bench anchors (run
2026-11-30-p, inputs rand * 140 - 40) and 3964 GB/s in bench_torch.py (run 2026-12-01-ba, inputs
rand): the same call timed both ways, on both inputs, at three row lengths."""

import json
import statistics
import sys

import torch
import torch.utils.benchmark as benchmark


def events_ms(run, runs=50, warm_ms=50.0):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm = 0.0
    while warm < warm_ms:
        start.record(); run(); end.record(); end.synchronize()
        warm += start.elapsed_time(end)
    times = []
    for _ in range(runs):
        start.record(); run(); end.record(); end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def timer_ms(run):
    timer = benchmark.Timer(stmt="run()", globals={"run": run})
    timer.timeit(3)
    return timer.blocked_autorange(min_run_time=0.5).median * 1e3


results = []
for rows, cols in [(65536, 1024), (4096, 16384), (2048, 32768)]:
    base = torch.rand(rows, cols, device="cuda")
    for label, x in [("rand", base), ("rand*140-40", base * 140 - 40), ("randn", torch.randn(rows, cols, device="cuda"))]:
        run = lambda: torch.softmax(x, dim=1)
        for how, ms in [("events", events_ms(run)), ("timer", timer_ms(run))]:
            gbs = 8 * rows * cols / ms / 1e6
            results.append({"rows": rows, "cols": cols, "input": label, "timing": how, "ms": ms, "GB/s": gbs})
            print(f"{rows}x{cols} {label:12} {how:7} {ms:.4f} ms {gbs:7.1f} GB/s", flush=True)
print(torch.__version__, torch.version.cuda, file=sys.stderr)
json.dump(results, open(sys.argv[1], "w"), indent=1)
