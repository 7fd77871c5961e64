#!/usr/bin/env bash
# Run ax: the demos with the library interleaved with the kernels in every timing round: the bf16
# ladder at 8192³ twice in a row and at 4096³, and the f32 ladder's best against SGEMM.
set -u
b=target/gpu-bundle
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 8192 8192 4096; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu matmul --variant warp_tiled --m 8192 --n 8192 --k 8192 --runs 10 >> $OUT/perf.txt 2>&1
echo "matmul rc $?" >> $OUT/run.txt
