#!/usr/bin/env bash
# Run ar: where conv2d_rolling_v4's warps wait, at 8192² 5×5 (77 % of copy) and 16384² 5×5 (81 %):
# Nsight Compute's stall reasons per issued instruction, at the GPU's own clocks, one launch each.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/unpacked unpack > /tmp/unpack.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for size in 8192 16384; do
  timeout 200 ncu --clock-control none -k regex:"conv2d_rolling_v4" --launch-skip 0 --launch-count 1 \
    --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum \
    $b/host --backend gpu conv2d --height $size --width $size --filter 5 --variant conv2d_rolling_v4 --runs 1 --warmup 0 > $OUT/ncu-$size.txt 2>&1
  echo "ncu $size rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt
for size in 8192 16384; do echo "== $size"; grep -E "stalled|issue_active|dram__|lts__|duration" $OUT/ncu-$size.txt | awk '$NF+0 > 0.05 || /dram|lts|duration|issue_active/' ; done
