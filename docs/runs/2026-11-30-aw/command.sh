#!/usr/bin/env bash
# Run aw: the persistent kernel's CUDA C twin (the specialised twin now loops over tiles as the Rust
# body does): the bf16 ladder with every twin at 4097×3073×2049 (the copies' path), 4096³ and 8192³.
set -u
b=target/gpu-bundle
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
  echo "nvcc $k rc $?" >> $OUT/run.txt
done
for s in "4097 3073 2049" "4096 4096 4096" "8192 8192 8192"; do
  set -- $s
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $1 --n $2 --k $3 --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
