"""PyTorch's FP8 product beside the project's at the shapes given (m x n x k): torch._scaled_mm with
per-tensor scales, row-wise ones ((m, 1) and (1, n)) and 1x128/128x128 block ones, e4m3 A (m x k) and B (k x n,
column-major), bf16 out, with and without fast accumulation, and rust_kernels.matmul_fp8 (auto) with
and without it on the same operands where the extension imports; CUDA events, median of 20 after 5 warm-ups, in one
process."""
import sys
import torch

try:
    import rust_kernels
except ImportError:
    rust_kernels = None


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


print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())
for shape in sys.argv[1:]:
    m, n, k = (int(x) for x in shape.split("x"))
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    scales = {
        "per-tensor": (torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")),
        "row-wise": (torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5),
        # _scaled_mm's layouts for 1x128 and 128x128 blocks: a's factors block-major, b's by block of columns.
        "block": (
            torch.rand(-(-k // 128), m, device="cuda").t() + 0.5,
            torch.rand(-(-n // 128), -(-k // 128), device="cuda").t() + 0.5,
        ),
    }
    tflops = lambda ms: 2 * m * n * k / ms / 1e9
    for kind, (sa, sb) in scales.items():
        timed = {}
        for fast in (False, True):
            try:
                timed[f"scaled_mm fast={fast}"] = median_ms(
                    lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
                )
            except Exception as e:
                print(f"  {shape} {kind}: scaled_mm fast={fast} refused: {str(e).splitlines()[0]}")
        if rust_kernels is not None:
            for fast in (False, True):
                try:
                    ours = rust_kernels.matmul_fp8(a, b, sa, sb, use_fast_accum=fast).double()
                except ValueError as e:
                    print(f"  {shape} {kind}: ours fast={fast} refused: {e}")
                    continue
                timed[f"ours fast={fast}"] = median_ms(lambda: rust_kernels.matmul_fp8(a, b, sa, sb, use_fast_accum=fast))
                if kind == "block":
                    columns = torch.arange(n, device="cuda") // 128
                    exact = sum(
                        sa[:, i:i + 1].double() * sb[i, columns].double()
                        * (a[:, i * 128:(i + 1) * 128].double() @ b[i * 128:(i + 1) * 128, :].double())
                        for i in range(-(-k // 128))
                    )
                else:
                    exact = sa.double() * sb.double() * (a.double() @ b.double())
                line = f"  {shape} {kind} fast={fast}: largest |ours - exact| / |exact|max {((ours - exact).abs().max() / exact.abs().max()).item():.2e}"
                if f"scaled_mm fast={fast}" in timed:
                    theirs = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast).double()
                    line += f", theirs {((theirs - exact).abs().max() / exact.abs().max()).item():.2e}"
                print(line)
        line = ", ".join(f"{name} {ms:.4f} ms {tflops(ms):.0f} TFLOP/s" for name, ms in timed.items())
        ratios = [
            f"{timed[f'scaled_mm fast={fast}'] / timed[f'ours fast={fast}']:.3f}x (fast={fast})"
            for fast in (False, True) if f"scaled_mm fast={fast}" in timed and f"ours fast={fast}" in timed
        ]
        if ratios:
            line += "; scaled_mm time / ours: " + ", ".join(ratios)
        print(f"{shape} {kind}: {line}", flush=True)
