#!/usr/bin/env bash
# Run bi: the mma.sync twins after their shared helpers moved to mma_sync.cuh: nvcc compiles them,
# and the matmul_bf16 and attention twins pass their checks beside the Rust kernels.
set -u
b=target/gpu-bundle
mkdir -p $b/cuda-c
for k in attention_flash attention_causal_flash matmul_bf16_pipelined; do
  nvcc -arch=sm_90a -O3 -ptx benches/reference/cuda_c/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
  echo "nvcc $k rc $?" >> $OUT/run.txt
done
for demo in "attention --heads 16 --seq 1024 --dim 128" "attention-causal --heads 3 --seq 131 --dim 64" "matmul-bf16 --m 4096 --n 4096 --k 4096" "matmul-bf16 --m 129 --n 255 --k 9"; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c $demo --runs 5 >> $OUT/perf.txt 2>&1
  echo "$demo rc $?" >> $OUT/run.txt
done
