#!/usr/bin/env bash
# Run cd: the PyTorch extension's tests and benchmark with change 98 (the bundle of runs cb and cc,
# kept on the machine), under run cb's profile.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export KERNELS_TILE_PROFILE=$PWD/docs/runs/2026-12-01-cb/tile-profile.json
timeout 300 bash $b/run.sh /tmp/torch torch > /tmp/torch-run.txt 2>&1; echo "torch rc $?" > $OUT/run.txt
cp /tmp/torch/torch-ops.json /tmp/torch/torch.log $OUT/ 2>/dev/null
cat $OUT/run.txt; grep -E "^Ran |^OK|FAILED|matmul" /tmp/torch/torch.log | head -10
