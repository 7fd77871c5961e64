"""Where the microseconds of one operator call go: the pieces of an eager `rust_kernels.add` on a
256-element tensor (GPU work of a few µs, so the host's cost is what is timed), each timed with
torch.utils.benchmark in several rounds that take the pieces in turn (a host that slows down for a
while then slows every piece alike, not the few timed meanwhile), the median of the rounds' medians
in µs. Run on a GPU machine with the wheel on PYTHONPATH:

    python3 call_cost.py [--json FILE]
"""

import argparse
import ctypes
import json
import statistics

import torch
import torch.utils.benchmark as benchmark

import rust_kernels
from rust_kernels import native, operators


ROUNDS = 7


def medians_us(pieces, globals_):
    """Each piece's median µs: ROUNDS rounds, each timing every piece in turn."""
    timers = {
        name: benchmark.Timer(stmt=statement, globals={**globals_, **extra})
        for name, (statement, extra) in pieces.items()
    }
    for timer in timers.values():
        timer.timeit(100)  # warm-up: the first calls open the GPU and load the kernels
    rounds = {name: [] for name in pieces}
    for _ in range(ROUNDS):
        for name, timer in timers.items():
            rounds[name].append(timer.blocked_autorange(min_run_time=0.05).median * 1e6)
    return {name: statistics.median(values) for name, values in rounds.items()}


def gpu_us(launch, repeats=200):
    """The GPU's time for one `launch`: CUDA events around it, the GPU kept busy by a sleep queued
    first, so that the host's time between the two events does not count."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        torch.cuda._sleep(200_000)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


class Interface:
    """Only `__cuda_array_interface__`, computed once: what the array-interface path reads."""

    def __init__(self, tensor):
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    a, b = torch.rand(256, device="cuda"), torch.rand(256, device="cuda")
    out, short = torch.empty_like(a), torch.empty(255, device="cuda")
    s = torch.cuda.current_stream().cuda_stream
    ia, ib, iout = Interface(a), Interface(b), Interface(out)
    cuda = ctypes.CDLL("libcuda.so.1")
    context, base, size = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_size_t()
    pointer = ctypes.c_uint64(a.data_ptr())
    n = operators._sum_plan(256, 0, "auto")[0]
    partials, ticket = torch.empty(n, device="cuda"), torch.zeros(1, device="cuda", dtype=torch.int32)
    refused = "try:\n    f()\nexcept ValueError:\n    pass"
    # The same call registered the older way (torch.library.Library with a CUDA kernel), and an
    # operator that does nothing: what the dispatcher's way into Python costs by itself.
    library = torch.library.Library("call_cost", "DEF")
    library.define("add(Tensor a, Tensor b) -> Tensor")
    library.define("nothing(Tensor a) -> Tensor")

    def add_cuda(a, b):
        out = torch.empty_like(a)
        native.add(a, b, out, **operators._launch_args(a))
        return out

    library.impl("add", add_cuda, "CUDA")
    library.impl("nothing", lambda a: a, "CUDA")
    g = dict(
        rust_kernels=rust_kernels,
        native=native,
        operators=operators,
        torch=torch,
        a=a,
        b=b,
        out=out,
        short=short,
        s=s,
        ia=ia,
        ib=ib,
        iout=iout,
        cuda=cuda,
        context=context,
        base=base,
        size=size,
        pointer=pointer,
        ref=ctypes.byref,
        n=n,
        partials=partials,
        ticket=ticket,
    )
    pieces = {
        "rust_kernels.add(a, b), eager": ("rust_kernels.add(a, b)", {}),
        "the same, checked in Python first (the careful way)": (
            "x, y = operators._ready('a', a), operators._ready('b', b)\n"
            "operators._same_device(x, y)\n"
            "assert x.shape == y.shape\n"
            "o = torch.empty_like(x)\n"
            "if x.numel():\n"
            "    native.add(x, y, o, **operators._launch_args(x))",
            {},
        ),
        "torch.ops.rust_kernels.add, the custom operator": ("operators._add(a, b, 'auto')", {}),
        "torch.ops.rust_kernels.add.default, the dispatcher alone (no gradient check)": (
            "op(a, b, 'auto')",
            {"op": torch.ops.rust_kernels.add.default},
        ),
        "torch.ops.call_cost.add, torch.library.Library": ("torch.ops.call_cost.add(a, b)", {}),
        "torch.ops.call_cost.nothing, torch.library.Library": ("torch.ops.call_cost.nothing(a)", {}),
        "native.add, torch tensors": ("native.add(a, b, out, stream=s, device=0)", {}),
        "native.add, torch tensors, arguments by position": ("native.add(a, b, out, s, 0)", {}),
        "native.add, array-interface objects": ("native.add(ia, ib, iout, stream=s, device=0)", {}),
        "native.add refused by its variant (nothing read)": (
            refused,
            {"f": lambda: native.add(a, b, out, stream=s, device=0, variant="none")},
        ),
        "native.add refused by a shape (three tensors read)": (
            refused,
            {"f": lambda: native.add(a, b, short, stream=s, device=0)},
        ),
        "ctypes: cuCtxGetCurrent (the call's own cost)": ("cuda.cuCtxGetCurrent(ref(context))", {}),
        "ctypes: cuPointerGetAttribute (context)": ("cuda.cuPointerGetAttribute(ref(context), 1, pointer)", {}),
        "ctypes: cuMemGetAddressRange": ("cuda.cuMemGetAddressRange_v2(ref(base), ref(size), pointer)", {}),
        "operators._eager(a, b)": ("operators._eager(a, b)", {}),
        "operators._ready('a', a)": ("operators._ready('a', a)", {}),
        "torch.empty_like(a)": ("torch.empty_like(a)", {}),
        "operators._launch_args(a)": ("operators._launch_args(a)", {}),
        "torch.add(a, b, out=out)": ("torch.add(a, b, out=out)", {}),
        "torch.add(a, b)": ("torch.add(a, b)", {}),
        # A reduction's call, piece by piece: what rust_kernels.sum does beyond add's pieces.
        "rust_kernels.sum(a), eager": ("rust_kernels.sum(a)", {}),
        "a.sum()": ("a.sum()", {}),
        "native.sum, one pass, keywords": (
            "native.sum(a, partials, None, ticket, variant='auto', stream=s, device=0)",
            {},
        ),
        "operators._sum_plan(256, 0, 'auto')": ("operators._sum_plan(256, 0, 'auto')", {}),
        "operators._ticket(a.device, s)": ("operators._ticket(a.device, s)", {}),
        "a.device": ("a.device", {}),
        "torch.cuda.is_current_stream_capturing()": ("torch.cuda.is_current_stream_capturing()", {}),
        "torch.empty(n, device=a.device, dtype=a.dtype)": ("torch.empty(n, device=a.device, dtype=a.dtype)", {}),
        "a.new_empty(n)": ("a.new_empty(n)", {}),
        "partials[0]": ("partials[0]", {}),
        "partials.select(0, 0)": ("partials.select(0, 0)", {}),
    }
    figures = medians_us(pieces, g)
    for name, us in figures.items():
        print(f"{name:55} {us:7.2f} us")
    # The bare kernel: what the GPU spends on the launch itself; a call's overhead is the rest.
    bare = figures["the kernel on the GPU (CUDA events)"] = gpu_us(lambda: native.add(a, b, out, stream=s, device=0))
    figures["torch.add's kernel on the GPU (CUDA events)"] = gpu_us(lambda: torch.add(a, b, out=out))
    for call in [
        "rust_kernels.add(a, b), eager",
        "the same, checked in Python first (the careful way)",
        "torch.ops.rust_kernels.add, the custom operator",
        "torch.ops.rust_kernels.add.default, the dispatcher alone (no gradient check)",
        "native.add, torch tensors",
    ]:
        figures[f"overhead over the bare kernel: {call}"] = figures[call] - bare
    figures["overhead over the bare kernel: torch.add(a, b)"] = (
        figures["torch.add(a, b)"] - figures["torch.add's kernel on the GPU (CUDA events)"]
    )
    for name in list(figures)[len(pieces) :]:
        print(f"{name:55} {figures[name]:7.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "us": figures}, f, indent=1)


if __name__ == "__main__":
    main()
