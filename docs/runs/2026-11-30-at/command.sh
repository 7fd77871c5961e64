#!/usr/bin/env bash
# Run at: after the session's last refactors (one store path for the wgmma accumulators, one header
# for the wgmma twins): the GPU suite for matmul_bf16 and mma_probe, the twins built by nvcc, the
# ladder at 8192³, and memcheck and racecheck over every kernel.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=mma_probe,matmul_bf16 timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
grep -E "test result|FAILED|panicked" $OUT/tests.log > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
  echo "nvcc $k rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m 8192 --n 8192 --k 8192 --runs 20 > $OUT/perf.txt 2>&1
echo "matmul-bf16 rc $?" >> $OUT/run.txt
for tool in memcheck racecheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
