#!/usr/bin/env bash
# Run 2026-11-30-p: the command was not recorded. From its files and docs/perf-log.md (change 16):
# the GPU family test (gpu-test.log), the softmax demos (rows of 256..32768 at 2^26 elements) and
# the scan demo at 2^28 with the CUDA C twins (demos.txt), then a bench of scan and softmax with CUB
# and PyTorch (pytorch.json, bench.log) that the 330-second limit cut after 105 cases, before the
# bench JSON was written. SASS from the bundle's prep.
