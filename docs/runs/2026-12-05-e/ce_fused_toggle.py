"""Cross-entropy forward + backward through the extension with the fused training pass off and on
(``operators._FUSED_TRAINING``), and on with the pipelined kernel
(``operators._FUSED_PIPELINED``), beside PyTorch's, in one process: rounds that take the four in
turn, CUDA events around each call, the median of every call. Run with the wheel on PYTHONPATH and
the bundle's python folder (timing.py) on sys.path: `python3 ce_fused_toggle.py BUNDLE/python`."""

import statistics
import sys

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".")
import rust_kernels  # noqa: E402
from rust_kernels import operators  # noqa: E402
from timing import timed_round  # noqa: E402


def main():
    ce = torch.nn.functional.cross_entropy
    for dtype, rows, vocabulary in [
        (torch.float32, 8192, 50257),
        (torch.float32, 4096, 128256),
        (torch.bfloat16, 8192, 50257),
        (torch.bfloat16, 8192, 128256),
    ]:
        logits = (torch.randn(rows, vocabulary, device="cuda") * 4).to(dtype).requires_grad_()
        target = torch.randint(0, vocabulary, (rows,), device="cuda")

        def step(f, fused, pipelined=False):
            operators._FUSED_TRAINING, operators._FUSED_PIPELINED = fused, pipelined
            logits.grad = None
            f(logits, target).backward()

        calls = {
            "two passes": lambda: step(rust_kernels.cross_entropy, False),
            "fused": lambda: step(rust_kernels.cross_entropy, True),
            "pipelined": lambda: step(rust_kernels.cross_entropy, True, True),
            "pytorch": lambda: step(ce, False),
        }
        grads = {}
        for name, f in calls.items():
            f()
            grads[name] = logits.grad.float().clone()
        for name in ("two passes", "fused", "pipelined"):
            err = (grads[name] - grads["pytorch"]).abs().max().item()
            print(f"{dtype} {rows}x{vocabulary} {name}: max |grad - pytorch's| {err:.3g}")
        del grads
        times = {name: [] for name in calls}
        for _ in range(5):
            for name, f in calls.items():
                times[name].extend(timed_round(f, 10))
        medians = {name: statistics.median(t) for name, t in times.items()}
        line = "  ".join(f"{name} {us:8.1f} us ({medians['pytorch'] / us:.3f}x)" for name, us in medians.items())
        print(f"{str(dtype):15} {rows}x{vocabulary}: {line}", flush=True)
        operators._FUSED_TRAINING = operators._FUSED_PIPELINED = False


if __name__ == "__main__":
    main()
