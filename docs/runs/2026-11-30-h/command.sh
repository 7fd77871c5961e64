#!/usr/bin/env bash
# Run 2026-11-30-h: the bundle of run g (7x7 rows one at a time in conv2d_blocked, V4 bounded to
# 3 blocks per SM), on the H200. As output.txt records it (the runner returned no files; output.txt
# is the standard output as the device tool gave it):
#   nvcc the CUDA C twins; host --backend gpu --cuda-c DIR conv2d --filter 5, then --filter 3;
#   tests/host-gpu-test --ignored every_registered_kernel_matches
