"""rust_kernels.matmul_fp8 with per-tensor scales and fast accumulation, each variant named, at the
shapes given (m x n x k), beside torch._scaled_mm: whether the extension's `auto` takes the tile the
host's does, and what each tile costs through the extension. CUDA events, median of 20 after 5."""
import sys
import torch
import rust_kernels


def median_ms(run):
    for _ in range(5):
        run()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


for shape in sys.argv[1:]:
    m, n, k = (int(x) for x in shape.split("x"))
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    tflops = lambda ms: 2 * m * n * k / ms / 1e9
    theirs = median_ms(lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True))
    print(f"{shape} scaled_mm fast {theirs:.4f} ms {tflops(theirs):.0f} TFLOP/s")
    for variant in ["auto", "persistent", "clustered", "persistent_128x128", "clustered_128x128", "persistent_128x64"]:
        ms = median_ms(lambda: rust_kernels.matmul_fp8(a, b, sa, sb, use_fast_accum=True, variant=variant))
        print(f"{shape} {variant} {ms:.4f} ms {tflops(ms):.0f} TFLOP/s {theirs / ms:.3f}x")
