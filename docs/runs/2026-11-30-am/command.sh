#!/usr/bin/env bash
# Run am: the bf16 GEMM and ldmatrix first on the GPU. The GPU suite for mma_probe, matmul_bf16 and
# matmul_tc; matmul-bf16 (Rust and twin) against cuBLAS bf16 at 4096³ and 8192³; matmul-tc against
# cuBLAS TF32; ncu of the bf16 kernel; the four compute-sanitizer tools over every kernel.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=mma_probe,matmul_bf16,matmul_tc timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked" $OUT/tests.log > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_tc_tf32 matmul_bf16_pipelined; do
  nvcc -arch=sm_90 -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
for s in 4096 8192; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m $s --n $s --k $s --runs 20 >> $OUT/perf.txt 2>&1
  echo "matmul-bf16 $s rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c matmul-tc --m 8192 --n 8192 --k 8192 --runs 20 >> $OUT/perf.txt 2>&1
echo "matmul-tc rc $?" >> $OUT/run.txt
m=sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warp_latency_issue_stalled_barrier,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__issue_active.avg.pct_of_peak_sustained_active
for v in matmul_bf16_pipelined matmul_bf16_pipelined_cuda; do
  echo "== $v" >> $OUT/ncu.txt
  timeout 90 ncu --kernel-name regex:"^$v\$" --launch-skip 2 --launch-count 1 --metrics $m \
    $b/host --backend gpu --cuda-c $b/cuda-c matmul-bf16 --m 4096 --n 4096 --k 4096 --runs 3 --warmup 1 >> $OUT/ncu.txt 2>&1
  echo "ncu $v rc $?" >> $OUT/run.txt
done
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
