#!/usr/bin/env bash
# Run as: the PyTorch extension with matmul_bf16 (tests and the benchmark against PyTorch's bf16
# matmul), then the criterion benches of the bf16 family with its twins (bench.json).
set -u
b=target/gpu-bundle
timeout 280 bash $b/run.sh $OUT/torch torch > $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
BENCH_FAMILIES=matmul_bf16 CUDA_C_PTX=$b/cuda-c BENCH_JSON=$OUT/bench.json timeout 250 $b/bench-kernels --bench > $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/run.txt
tail -3 $OUT/bench.log >> $OUT/run.txt
