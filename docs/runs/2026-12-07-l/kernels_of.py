"""The CUDA kernels torch._scaled_mm launches for each kind of scales and accumulation at the shapes
given (m x n x k), with their grids and blocks: the tiles and clusters cuBLASLt picks, to set ours
beside. e4m3 A (m x k), B (k x n) column-major, bf16 out; torch.profiler's kernel events."""
import sys
import torch
from torch.profiler import ProfilerActivity, profile

for shape in sys.argv[1:]:
    m, n, k = (int(x) for x in shape.split("x"))
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    scales = {
        "per-tensor": (torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")),
        "row-wise": (torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5),
        "block": (
            torch.rand(-(-k // 128), m, device="cuda").t() + 0.5,
            torch.rand(-(-n // 128), -(-k // 128), device="cuda").t() + 0.5,
        ),
    }
    for kind, (sa, sb) in scales.items():
        for fast in (False, True):
            run = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
            try:
                run()
            except Exception as e:
                print(f"{shape} {kind} fast={fast}: refused: {str(e).splitlines()[0]}")
                continue
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                run()
                torch.cuda.synchronize()
            for event in prof.events():
                if event.device_type == torch.autograd.DeviceType.CUDA:
                    print(f"{shape} {kind} fast={fast}: {event.name} {event.device_time:.1f} us")
