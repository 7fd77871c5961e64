"""Run 2026-12-06 g, part 2: the host's microseconds per call of a small product, the operator's
fast path (straight to the native layer, positional, C by `new_empty`) against the careful path
every product took before (each operand through `_ready`, the devices compared, `torch.empty` with
the device, the native call with keywords), and PyTorch's `a @ b`: best of 5 rounds of 400 calls,
no synchronisation inside (the GPU work of each is a few µs, so the host's enqueueing is timed);
then the GPU's own time (a sleep queued first, CUDA events around one call) and the suite's time
(events around each of back-to-back calls, as bench_models.py times)."""

import statistics
import time

import torch

import rust_kernels
from rust_kernels import native, operators


def host_us(f, calls=400, rounds=5):
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def gpu_us(f, repeats=50):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        torch.cuda._sleep(200_000)
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def careful(launch, a, b, out_dtype):
    """The path every product took before this run's change."""
    a, b = operators._ready("a", a, a.dtype), operators._ready("b", b, b.dtype)
    operators._same_device(a, b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError("shapes")
    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=out_dtype)
    launch(a, b, c, variant="auto", **operators._launch_args(a))
    return c


def main():
    from timing import time_both

    for m, n, k in [(128, 768, 3072), (1, 4096, 4096), (16, 4096, 4096), (128, 2304, 768), (1024, 2304, 768)]:
        a = (torch.rand(m, k, device="cuda") - 0.5).bfloat16()
        b = (torch.rand(k, n, device="cuda") - 0.5).bfloat16()
        ours = lambda: rust_kernels.matmul_bf16(a, b, out_dtype=torch.bfloat16)
        pieces = {
            "pytorch a @ b": lambda: a @ b,
            "operator (fast path)": ours,
            "careful path": lambda: careful(native.matmul_bf16_rounded, a, b, torch.bfloat16),
            "torch.empty(device=)": lambda: torch.empty((m, n), device=a.device, dtype=torch.bfloat16),
            "a.new_empty": lambda: a.new_empty((m, n)),
        }
        print(f"bf16 C {m} x {n} x {k}")
        for name, f in pieces.items():
            print(f"  host {name:22} {host_us(f):7.2f} us")
        print(f"  gpu  pytorch {gpu_us(lambda: a @ b):7.2f} us   ours {gpu_us(ours):7.2f} us")
        suite_ours, suite_torch = time_both(ours, lambda: a @ b)
        print(f"  suite-timed  pytorch {suite_torch:7.2f} us   ours {suite_ours:7.2f} us")


if __name__ == "__main__":
    main()
