#!/usr/bin/env bash
# Run bz: run by's question, one step further: how long the SMs are active against the launch's
# elapsed time (split-k 64×64 against its twin at 2048³), and register_1d against its twin at 1024³
# with the caches left warm (`--cache-control none`, as the host's timing loop runs them).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > /dev/null 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/cc
for f in split_k register_1d; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_$f.cu -o /tmp/cc/matmul_$f.ptx >> $OUT/run.txt 2>&1 &
done
wait
metrics="gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sector_hit_rate.pct"
h="$b/host --backend gpu --cuda-c /tmp/cc"
{
timeout 60 ncu --clock-control none -k regex:"split_k" --launch-skip 2 --launch-count 2 --metrics $metrics \
  $h matmul --m 2048 --n 2048 --k 2048 --variant split_k --runs 2 --warmup 1
timeout 60 ncu --clock-control none --cache-control none -k regex:"register_1d" --launch-skip 2 --launch-count 2 --metrics $metrics \
  $h matmul --m 1024 --n 1024 --k 1024 --variant register_1d --runs 2 --warmup 1
} > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time|sm__cycles|inst_executed.sum|issue_active|sectors|hit_rate" $OUT/ncu.txt | sed 's/  */ /g' | cut -c1-110
