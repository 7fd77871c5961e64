#!/usr/bin/env bash
# Run 2026-11-30-d: the command was not recorded. Its files (bench.log, environment.txt) are those
# of the bundle's run.sh in bench mode: the CUDA C twins, then `bench-kernels --bench` (criterion).
set -u
bash target/gpu-bundle/run.sh $OUT bench
