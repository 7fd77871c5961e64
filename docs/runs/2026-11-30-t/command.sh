#!/usr/bin/env bash
# Run 2026-11-30-t: the command was not recorded. From its files and docs/perf-log.md (run t): the
# bundle's prep (prep.txt, environment.txt, sass.txt.gz), demos with the CUDA C twins, cuBLAS and CUB
# (demos.txt: matmul, scan, histogram_f32, ...; "demos rc" in run.txt), then
# `host --backend gpu autotune --family matmul` (autotune.txt, autotune.err, tile-profile.json).
