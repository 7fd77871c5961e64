#!/usr/bin/env bash
# Run bj: why split-k trails its CUDA C twin (0.75–0.89 in run x): both at 1024³ and the three
# skinny shapes, ncu's instruction counts and stall reasons for both, and the twin's SASS.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvcc -arch=sm_90a -O3 -cubin $b/cuda-c-src/matmul_split_k.cu -o /tmp/sk.cubin -Xptxas -v > $OUT/ptxas.txt 2>&1
cuobjdump -sass /tmp/sk.cubin | gzip > $OUT/twin-sass.txt.gz; echo "sass rc $?" >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "1024 1024 1024" "8192 64 8192" "64 8192 8192" "256 256 65536"; do
  set -- $s
  timeout 60 $h matmul --m $1 --n $2 --k $3 --variant matmul_split_k --runs 20
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle math_pipe_throttle dispatch_stall no_instruction wait selected not_selected membar drain; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
for s in "1024 1024 1024" "8192 64 8192"; do
  set -- $s
  timeout 120 ncu --clock-control none --target-processes all -k regex:"matmul_split_k" --launch-skip 0 --launch-count 4 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__occupancy_limit_registers,sm__warps_active.avg.per_cycle_active,l1tex__t_requests_pipeline_lsu_mem_global_op_red.sum,lts__t_requests_op_red.sum$m \
    $b/host --backend gpu --cuda-c $b/cuda-c matmul --m $1 --n $2 --k $3 --variant matmul_split_k --runs 1 --warmup 0 >> $OUT/ncu.txt 2>&1; echo "ncu $s rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt; grep -E "registers|spill" $OUT/ptxas.txt | head -4
grep -E "Rust/CUDA C" $OUT/demos.txt
grep -E "^  [a-zA-Z_0-9]+.*\(|stalled_(dispatch|wait|short|long|not_sel|barrier|math|lg|mio|membar|drain)|gpu__time|inst_executed|issue_active|registers|grid_size|warps_active|_red" $OUT/ncu.txt | head -90
