#!/usr/bin/env bash
# Run aq: the whole GPU suite on the sm_90a PTX (loaded for every kernel on the H200 since change
# 53), with the managed, external and pipeline tests and the reduce test; then the bf16 ladder with
# every CUDA C twin (the TMA kernel's new) at 4096³ and 8192³.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
{
for t in host-gpu-test host-gpu_external-test host-gpu_pipeline-test host-reduce-test; do
  echo "== $t"
  timeout 300 $b/tests/$t --include-ignored
done
} > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked" $OUT/tests.log | head -30 > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
