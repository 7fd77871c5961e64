#!/usr/bin/env bash
# Run 2026-11-30-r: the command was not recorded. From its files: the bundle's run.sh in tests mode
# (tests.log, sanitizer.txt, environment.txt, sass.txt.gz; its test and sanitizer lines in run.txt),
# then `host --backend gpu --cuda-c DIR <family>` demos with the twins, cuBLAS and CUB (demos.txt:
# matmul, scan, scan_i32, softmax, histogram families; see docs/perf-log.md, run r).
