#!/usr/bin/env bash
# Run ap: the TMA producer first on the GPU (tensor maps from the host, one thread filling a slot).
# The GPU suite for matmul_bf16 and mma_probe; matmul-bf16 (three rungs, Rust and twins) against
# cuBLAS bf16 at 4096³, 8192³ and an odd shape; ncu of the new kernel; the four sanitizers.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=mma_probe,matmul_bf16 timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked|failed" $OUT/tests.log | head -20 > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m 4097 --n 3073 --k 2049 --runs 10 >> $OUT/perf.txt 2>&1
echo "matmul-bf16 odd rc $?" >> $OUT/run.txt
m=sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active
echo "== matmul_bf16_tma" >> $OUT/ncu.txt
timeout 90 ncu --kernel-name regex:"^matmul_bf16_tma\$" --launch-skip 2 --launch-count 1 --metrics $m \
  $b/host --backend gpu matmul-bf16 --variant tma --m 4096 --n 4096 --k 4096 --runs 3 --warmup 1 >> $OUT/ncu.txt 2>&1
echo "ncu rc $?" >> $OUT/run.txt
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
