"""Run 2026-12-06 h, call 2: the swapped rung under compute-sanitizer's racecheck at 16 × 4096 ×
4096 with bf16 C (runs of k meeting in partial sums), launched through the extension, so that no
cuBLAS kernel runs in the process (the host's baseline crashed racecheck in call 1); checked
against the f64 product."""

import torch

import rust_kernels

torch.manual_seed(0)
for m, n, k in [(16, 4096, 4096), (7, 520, 3000)]:
    a = torch.randn(m, k, device="cuda").bfloat16()
    b = torch.randn(k, n, device="cuda").bfloat16()
    c = rust_kernels.matmul_bf16(a, b, variant="swapped", out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    exact = a.double() @ b.double()
    err = ((c.double() - exact).abs() / (exact.abs() + 1e-3 * k**0.5)).max().item()
    print(f"{m}x{n}x{k}: max relative error {err:.2e}")
    assert err < 2e-2, err
