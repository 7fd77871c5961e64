#!/usr/bin/env bash
# Run au: change 57, the persistent grid. The GPU suite for matmul_bf16 (the specialised bodies now
# loop over tiles); the ladder with twins at 2048³, 4096³ and 8192³; memcheck and racecheck.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=matmul_bf16 timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
grep -E "test result|FAILED|panicked" $OUT/tests.log > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
  echo "nvcc $k rc $?" >> $OUT/run.txt
done
for s in 2048 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
for tool in memcheck racecheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
