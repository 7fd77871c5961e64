#!/usr/bin/env bash
# Run an: wgmma first on the GPU (the sm_90a PTX now loaded on the H200). The GPU suite for
# mma_probe, matmul_bf16 and matmul_tc (and the occupancy test, fixed for opt-in shared memory);
# matmul-bf16 (both rungs, Rust and twins) against cuBLAS bf16 at 4096³ and 8192³; ncu of the wgmma
# kernel; the four compute-sanitizer tools over every kernel.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=mma_probe,matmul_bf16,matmul_tc timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked|failed" $OUT/tests.log | head -20 > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_tc_tf32 matmul_bf16_pipelined matmul_bf16_wgmma; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m 4097 --n 3073 --k 2049 --runs 10 >> $OUT/perf.txt 2>&1
echo "matmul-bf16 odd rc $?" >> $OUT/run.txt
m=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__issue_active.avg.pct_of_peak_sustained_active
for v in matmul_bf16_wgmma; do
  echo "== $v" >> $OUT/ncu.txt
  timeout 90 ncu --kernel-name regex:"^$v\$" --launch-skip 2 --launch-count 1 --metrics $m \
    $b/host --backend gpu matmul-bf16 --variant wgmma --m 4096 --n 4096 --k 4096 --runs 3 --warmup 1 >> $OUT/ncu.txt 2>&1
  echo "ncu $v rc $?" >> $OUT/run.txt
done
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
