#!/usr/bin/env bash
# Run bb: the staged scans as committed (the ragged last tile copied a float at a time, after run
# ba's memcheck): the scan families' GPU suite, memcheck and racecheck on both staged kernels at
# sizes whose input allocation ends inside a 16-byte chunk, the demos at 2^24 and 2^28 beside
# twins and CUB; ncu's stall reasons for the staged and ordered scans at 2^28.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
grep -A1 "staged" /tmp/prep-out/environment.txt | grep -E "Compiling|registers|stack" > $OUT/ptxas.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for k in 24 28; do
  timeout 60 $h scan --n $((1 << k)) --variant scan_look_back_staged --runs 20
  timeout 60 $h scan-i32 --n $((1 << k)) --variant scan_look_back_staged_i32 --runs 20
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
for t in memcheck racecheck; do
  for n in 1000003 8193 1; do
    timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu scan-i32 --n $n --variant scan_look_back_staged_i32 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t i32 $n rc $?" >> $OUT/run.txt
    timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu scan --n $n --variant scan_look_back_staged --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t f32 $n rc $?" >> $OUT/run.txt
  done
done
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=scan,scan_i32 timeout 220 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
timeout 120 ncu --target-processes all -k regex:"scan_look_back_(ordered|staged)$" --launch-skip 0 --launch-count 8 \
  --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  $b/host --backend gpu scan --n 268435456 --variant all --runs 1 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt | sort | uniq -c; cat $OUT/ptxas.txt | cut -c1-150
grep -E "cub_|scan_look_back|Rust/CUDA C" $OUT/demos.txt | cut -c1-130
grep -E "^  [a-z_]+.*\(|stalled|gpu__time|dram__|inst_executed" $OUT/ncu.txt | grep -v "(129, 1, 1)" | head -80
