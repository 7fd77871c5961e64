#!/usr/bin/env bash
# Run by: why two rungs trail their twins (run bx): matmul_split_k (64×64, grid one deep) at 2048³
# 0.861× its twin and 0.84× the 64×64 warp tile, and matmul_register_1d at 1024³ 0.932×. Nsight
# Compute at the GPU's own clocks on the Rust kernels, their twins and the 64×64 warp tile.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > /dev/null 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/cc
for f in split_k register_1d warp_tiled; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_$f.cu -o /tmp/cc/matmul_$f.ptx >> $OUT/run.txt 2>&1 &
done
wait
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait not_selected lg_throttle no_instruction; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
metrics="gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed$m"
h="$b/host --backend gpu --cuda-c /tmp/cc"
{
timeout 100 ncu --clock-control none -k regex:"split_k|warp_tiled_64x64" --launch-skip 2 --launch-count 6 --metrics $metrics \
  $h matmul --m 2048 --n 2048 --k 2048 --variant split_k --runs 3 --warmup 1
timeout 60 ncu --clock-control none -k regex:"warp_tiled_64x64" --launch-skip 1 --launch-count 1 --metrics $metrics \
  $h matmul --m 2048 --n 2048 --k 2048 --variant warp_tiled_64x64 --runs 2 --warmup 1
timeout 100 ncu --clock-control none -k regex:"register_1d" --launch-skip 2 --launch-count 4 --metrics $metrics \
  $h matmul --m 1024 --n 1024 --k 1024 --variant register_1d --runs 3 --warmup 1
} > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time|grid_size|registers|occupancy_limit|warps_active|issue_active|inst_executed.sum|bank_conf|stalled_(long|short|barrier|wait|dispatch|not_sel|lg|mio|math|no_in)" $OUT/ncu.txt | sed 's/  */ /g' | cut -c1-120 | head -150
