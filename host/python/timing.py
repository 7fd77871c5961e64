"""Timing shared by the model-shape benches: CUDA events around each call, in rounds that take
ours and PyTorch's in turn (a GPU or host that slows down for a while slows both alike), the
median of every call."""

import statistics

import torch

# Rounds that alternate ours and PyTorch's, and calls per round: at least MIN_CALLS, more while a
# round is under ROUND_SECONDS.
ROUNDS = 3
MIN_CALLS = 5
MAX_CALLS = 50
ROUND_SECONDS = 0.05


def timed_round(f, calls):
    """µs of each of `calls` calls of `f`, by CUDA events."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in events:
        start.record()
        f()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) * 1e3 for start, end in events]


def time_both(ours, theirs):
    """The median µs of `ours` and of `theirs`, after three warm-up calls each."""
    for f in (ours, theirs):
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    first = statistics.median(timed_round(ours, MIN_CALLS) + timed_round(theirs, MIN_CALLS))
    calls = max(MIN_CALLS, min(MAX_CALLS, int(ROUND_SECONDS * 1e6 / max(first, 1.0))))
    times = ([], [])
    for _ in range(ROUNDS):
        times[0].extend(timed_round(ours, calls))
        times[1].extend(timed_round(theirs, calls))
    return statistics.median(times[0]), statistics.median(times[1])
