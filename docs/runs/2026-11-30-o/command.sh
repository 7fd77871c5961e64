#!/usr/bin/env bash
# Run 2026-11-30-o: GPU family test, detector tests, the four sanitizers on `host smoke`, then
# `host softmax` at 2^26 elements for cols 256..32768 and `host scan` (inclusive, exclusive) at 2^28,
# each with the CUDA C twins (--cuda-c). As output.txt records it; the per-command files did not come
# back (the runner returns few files). In outline (the exact flags were not recorded):
#   tests/host-gpu-test --include-ignored; tests/kernels-detectors-test
#   for t in memcheck racecheck synccheck initcheck; do compute-sanitizer --tool $t host --backend gpu smoke; done
#   for c in 256 1024 4096 8192 16384 32768; do host --backend gpu --cuda-c DIR softmax --cols $c; done
#   host --backend gpu --cuda-c DIR scan --n 268435456 (inclusive, then exclusive)
