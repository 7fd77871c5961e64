"""The backward pass alone (dQ, dK, dV from a kept graph), rust_kernels.attention against PyTorch's
scaled_dot_product_attention, bf16, in one process: CUDA events, median of 20 after 5 warm-ups,
the two alternated shape by shape; TFLOP/s counted as 2.5x the forward's (FlashAttention's
convention, the host's). Also the largest difference of each gradient from SDPA's, relative to
SDPA's largest magnitude."""
import torch
import torch.nn.functional as F
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


print(torch.__version__, torch.cuda.get_device_name())
shapes = [(8, 16, 16, 4096, 128), (2, 16, 16, 8192, 128), (16, 16, 16, 2048, 64), (32, 16, 16, 512, 128), (4, 32, 8, 4096, 128)]
for batch, heads, heads_kv, seq, dim in shapes:
    for causal in (False, True):
        torch.manual_seed(seq + dim)
        q = torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(batch, heads_kv, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        grad = torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16)
        gqa = heads != heads_kv
        outputs = {
            "sdpa": F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa),
            "ours": rust_kernels.attention(q, k, v, causal=causal, enable_gqa=gqa),
        }
        grads = {name: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True) for name, o in outputs.items()}
        ms = {name: median_ms(lambda o=o: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True)) for name, o in outputs.items()}
        flops = 2.5 * 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
        diffs = " ".join(
            f"d{w} {((a.float() - b.float()).abs().max() / b.float().abs().max()).item():.1e}"
            for w, a, b in zip("qkv", grads["ours"], grads["sdpa"])
        )
        print(
            f"backward b{batch} h{heads}/{heads_kv} s{seq} d{dim} causal={causal}: ours {ms['ours']:.3f} ms "
            f"({flops / ms['ours'] / 1e9:.1f} TFLOP/s), sdpa {ms['sdpa']:.3f} ms ({flops / ms['sdpa'] / 1e9:.1f}), "
            f"ours/sdpa speed {ms['sdpa'] / ms['ours']:.3f}; vs sdpa: {diffs}"
        )
        del q, k, v, grad, outputs, grads
        torch.cuda.empty_cache()

# The forward with and without the lse output (the same kernel, rust_kernels' auto choice),
# alternated three times: what saving the lse costs.
from rust_kernels.operators import _launch_args, _native

for batch, heads, seq, dim, causal in [(8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (16, 16, 2048, 64, False)]:
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32)
    launch = _launch_args(q)
    runs = {
        "without": lambda: _native.attention(q, k, v, o, causal=causal, **launch),
        "with lse": lambda: _native.attention(q, k, v, o, lse=lse, causal=causal, **launch),
    }
    times = {name: [] for name in runs}
    for _ in range(3):
        for name, run in runs.items():
            times[name].append(median_ms(run))
    flops = 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
    print(
        f"forward b{batch} h{heads} s{seq} d{dim} causal={causal}: "
        + ", ".join(f"{name} {min(t):.3f}/{sorted(t)[1]:.3f} ms ({flops / sorted(t)[1] / 1e9:.0f} TFLOP/s)" for name, t in times.items())
    )
