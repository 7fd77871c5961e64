#!/usr/bin/env bash
# Run 2026-11-30-g: the command was not recorded. Its files (bench.json, bench.log, environment.txt, pytorch.json)
# are those of the bundle's run.sh in bench mode: the CUDA C twins (and SASS), PyTorch's baselines
# (pytorch/anchors.py -> pytorch.json), then `bench-kernels --bench` with BENCH_JSON=bench.json.
set -u
bash target/gpu-bundle/run.sh $OUT bench
