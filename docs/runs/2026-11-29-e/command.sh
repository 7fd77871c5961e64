#!/usr/bin/env bash
# Run 2026-11-29-e: the command was not recorded. experiment.txt is an A/B in one session: the
# kernels built without the device-side carve check loaded under the CUDA C names through --cuda-c
# (DIR "experiment"), alternating with the real CUDA C twins (DIR "cc"), two repetitions, 50 runs per
# median (docs/perf-log.md, change 3). In outline (the exact flags were not recorded):
#   for rep in 1 2; do for dir in experiment cc; do
#     host --backend gpu --cuda-c $dir --runs 50 all   # shared_mem_add and the three matmuls
#   done; done
