#!/usr/bin/env bash
# Run bf: change 87b, the 128-output configurations with the fragments of k + 1 read before the
# products of k (two sets taking turns), beside the 128×128 rung, twins and cuBLAS, 2048³ to
# 8192³; the matmul GPU suite; memcheck on the new kernels; ncu stall reasons of ours and
# cuBLAS's kernel at 4096³.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
V="matmul_warp_tiled matmul_warp_tiled_256x128 matmul_warp_tiled_128x256 matmul_warp_tiled_128x128_wide"
{
for s in 4096 8192 2048; do
  for v in $V; do
    timeout 60 $h matmul --m $s --n $s --k $s --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 240 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for v in 256x128 128x256 128x128_wide; do
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 99 --variant matmul_warp_tiled_$v --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $v rc $?" >> $OUT/run.txt
done
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall no_instruction wait selected not_selected lg_throttle tex_throttle misc; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
timeout 150 ncu --clock-control none --target-processes all -k regex:"gemm|matmul_warp_tiled(_128x128_wide|_256x128)?$" --launch-skip 0 --launch-count 6 \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.per_cycle_active$m \
  $b/host --backend gpu matmul --m 4096 --n 4096 --k 4096 --variant all --runs 1 --warmup 0 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "matmul_warp|cublas|Rust/CUDA C" $OUT/demos.txt | cut -c1-140
grep -E "^  [a-zA-Z_0-9]+.*\(|stalled|gpu__time|inst_executed|issue_active|pipe_fma|per_second|launch__|warps_active" $OUT/ncu.txt | head -120
