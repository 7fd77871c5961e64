"""The model-shape suite's products (benches/shapes/models.json, as bench_models.py reads it) in
FP8: rust_kernels.matmul_fp8 against torch._scaled_mm with per-tensor scales, with and without fast
accumulation, e4m3 A (m x k) and B (k x n, column-major), bf16 out; the shapes _scaled_mm takes
(k and n multiples of 16). CUDA events, median of 20 after 5 warm-ups, one process; each product's
largest error against the exact one beside _scaled_mm's. Prints each shape and each setting's
geometric mean of their time over ours."""
import math
import sys
import torch
import rust_kernels
sys.path.insert(0, sys.argv[1])
import bench_models

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

shapes = bench_models.load_shapes(bench_models.shapes_file())
ratios = {False: [], True: []}
for (m, n, k), uses in shapes.items():
    if k % 16 or n % 16:
        print(f"{m} x {n} x {k}: skipped (_scaled_mm takes k and n multiples of 16)")
        continue
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    exact = sa.double() * sb.double() * (a.double() @ b.double())
    line = f"{m:6} x {n:6} x {k:6}"
    for fast in (True, False):
        theirs = median_ms(lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast))
        ours = median_ms(lambda: rust_kernels.matmul_fp8(a, b, sa, sb, use_fast_accum=fast))
        got = rust_kernels.matmul_fp8(a, b, sa, sb, use_fast_accum=fast).double()
        ref = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast).double()
        scale = exact.abs().max().item() or 1.0
        ratios[fast].append(theirs / ours)
        line += (f"  fast={fast!s:5} ours {ours * 1e3:8.1f} us theirs {theirs * 1e3:8.1f} us {theirs / ours:.3f}x"
                 f" err {(got - exact).abs().max().item() / scale:.1e}/{(ref - exact).abs().max().item() / scale:.1e}")
    print(line, " ", uses[0])
for fast, r in ratios.items():
    if r:
        geomean = math.exp(sum(map(math.log, r)) / len(r))
        print(f"fast={fast}: geomean {geomean:.3f}x over {len(r)} shapes, worst {min(r):.3f}x, {sum(x < 0.85 for x in r)} below 0.85x")
