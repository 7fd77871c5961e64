"""PyTorch's scaled_dot_product_attention backward alone (dQ, dK, dV from a kept graph), bf16,
at the shapes the host demo times the backward pass at: CUDA events, median of 20 after 5
warm-ups, TFLOP/s counted as 2.5x the forward's (FlashAttention's convention, the host's)."""
import torch
import torch.nn.functional as F

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

print(torch.__version__, torch.cuda.get_device_name())
for batch, heads, seq, dim in [(8, 16, 4096, 128), (2, 16, 8192, 128), (16, 16, 2048, 64), (32, 16, 512, 128)]:
    for causal in (False, True):
        q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        grad = torch.randn_like(o)
        ms = median_ms(lambda: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True))
        flops = 2.5 * 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
        print(f"sdpa backward b{batch} h{heads} s{seq} d{dim} causal={causal}: {ms:.3f} ms {flops / ms / 1e9:.1f} TFLOP/s")
