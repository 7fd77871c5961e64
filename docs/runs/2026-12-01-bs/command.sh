#!/usr/bin/env bash
# Run bs: where the time goes at 1024³ (0.70× cuBLAS): Nsight Compute on split-k 64×128 (its
# zeroing launch and its product) and on cuBLAS's kernel, at the GPU's own clocks.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait not_selected lg_throttle membar; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
timeout 200 ncu --clock-control none --target-processes all --launch-skip 0 --launch-count 12 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed$m \
  $b/host --backend gpu matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_64x128 --runs 2 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time|grid_size|block_size|registers|warps_active|issue_active|pipe_fma|inst_executed.sum|stalled_(long|short|barrier|wait|dispatch|not_sel|lg|membar)" $OUT/ncu.txt | head -120
