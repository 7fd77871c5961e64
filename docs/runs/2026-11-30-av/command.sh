#!/usr/bin/env bash
# Run av: the PyTorch extension with matmul_bf16's auto on the persistent kernel: tests and the
# benchmark against PyTorch.
set -u
b=target/gpu-bundle
timeout 280 bash $b/run.sh $OUT/torch torch > $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
