import torch, rust_kernels
from torch.utils import benchmark as tb
F = torch.nn.functional
for dtype, rows, cols in [(torch.float32, 8192, 50257), (torch.bfloat16, 8192, 50257), (torch.bfloat16, 8192, 128256)]:
    x = (torch.randn(rows, cols, device="cuda") * 4).to(dtype)
    t = torch.randint(0, cols, (rows,), device="cuda")
    xs = x.clone().requires_grad_()
    def both(f):
        xs.grad = None
        f(xs, t).backward()
    res = {}
    for name, f in [("ours", rust_kernels.cross_entropy), ("torch", F.cross_entropy)]:
        for what, g in [("fwd", lambda f=f: f(x, t)), ("fwd+bwd", lambda f=f: both(f))]:
            g(); torch.cuda.synchronize()
            m = tb.Timer("g()", globals={"g": g}).blocked_autorange(min_run_time=1.0)
            res[(name, what)] = m.median * 1e6
    for what in ["fwd", "fwd+bwd"]:
        print(f"{dtype} {rows}x{cols} {what}: ours {res[('ours', what)]:.1f} us, torch {res[('torch', what)]:.1f} us, x{res[('torch', what)] / res[('ours', what)]:.3f}", flush=True)
