#!/usr/bin/env bash
# Run al: the first tensor-core run. The GPU suite for mma_probe, matmul_tc and matmul, the pipeline
# test (row count fixed), the four compute-sanitizer tools over every kernel, then the TF32 rung
# (Rust and its nvcc twin) at 4096³ and 8192³ beside the f32 ladder's best and cuBLAS SGEMM.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
{
for t in host-gpu-test host-gpu_pipeline-test; do
  echo "== $t"
  TEST_FAMILIES=mma_probe,matmul_tc,matmul timeout 200 $b/tests/$t --include-ignored
done
} > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked" $OUT/tests.log > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_tc_tf32; do
  nvcc -arch=sm_90 -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-tc --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-tc $s rc $?" >> $OUT/run.txt
  timeout 60 $b/host --backend gpu matmul --variant warp_tiled --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul $s rc $?" >> $OUT/run.txt
done
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 70 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
