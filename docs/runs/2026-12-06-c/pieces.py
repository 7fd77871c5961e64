"""Run 2026-12-06 c, part 3: where the host's microseconds of one small tensor-core product go.
Host time per call (a loop of calls, no synchronisation inside; the GPU work of each is a few µs,
so the host's enqueueing is what is timed), best of 5 rounds of 400 calls, for PyTorch's `a @ b`,
the operator, the native call with C given (auto, and the rung named), and the Python pieces; then
the GPU's own time of each product (a sleep queued first, CUDA events around one call)."""

import statistics
import sys
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


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    s = torch.cuda.current_stream().cuda_stream
    for dtype, m, n, k in [("bf16", 128, 768, 3072), ("bf16", 1024, 2304, 768), ("bf16", 128, 4096, 4096),
                           ("tf32", 1, 3072, 768), ("tf32", 128, 2304, 768)]:
        a = torch.rand(m, k, device="cuda") - 0.5
        b = torch.rand(k, n, device="cuda") - 0.5
        c = torch.empty(m, n, device="cuda")
        if dtype == "bf16":
            a, b = a.bfloat16(), b.bfloat16()
            ours, nat, rung = rust_kernels.matmul_bf16, native.matmul_bf16, "matmul_bf16_persistent"
            theirs = lambda: a @ b
        else:
            ours, nat, rung = rust_kernels.matmul_tf32, native.matmul_tf32, (
                "matmul_tc_small_m1" if m == 1 else "matmul_tc_wgmma_128x128")

            def theirs():
                torch.backends.cuda.matmul.allow_tf32 = True
                out = a @ b
                torch.backends.cuda.matmul.allow_tf32 = False
                return out
        pieces = {
            "pytorch a @ b": theirs,
            "operator": lambda: ours(a, b),
            "native, auto": lambda: nat(a, b, c, stream=s, device=0),
            "native, rung named": lambda: nat(a, b, c, stream=s, device=0, variant=rung),
            "torch.empty": lambda: torch.empty((m, n), device="cuda"),
            "_ready(a)": lambda: operators._ready("a", a, a.dtype),
            "_launch_args": lambda: operators._launch_args(a),
        }
        print(f"{dtype} {m} x {n} x {k}")
        for name, f in pieces.items():
            print(f"  host {name:22} {host_us(f):7.2f} us")
        print(f"  gpu  pytorch {gpu_us(theirs):7.2f} us   ours {gpu_us(lambda: ours(a, b)):7.2f} us")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
