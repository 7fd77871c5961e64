#!/usr/bin/env bash
# Run a (2026-12-02): two things in one call.
# 1. The skewed transpose's load order as an A/B. ptxas schedules `transpose_skewed`'s interior
#    three ways from near-identical PTX: as committed (all five 16-byte loads after all five
#    addresses, 40 registers), as the generic form of runs aw/ax (the first load ~20 instructions in,
#    its shared store before the other four loads; 3118–3191 GB/s there against 3013 as committed in
#    run ay), and with the generic form's output-item formula alone (two loads early, 35 registers).
#    ab/generic: that commit's PTX (3726944); ab/formula: the committed source with
#    `output_item` = ((i / 16) % 64, 16 (i / 1024) + i % 16); each entry renamed `_cuda` and loaded
#    as the "CUDA C" twin beside the committed Rust kernel: Rust/CUDA C < 1 means the alternative
#    is faster.
# 2. The criterion benches of issues 9 and 10's families (all but transpose, which waits for the
#    A/B) with BENCH_MEASURE_MS=400, the PyTorch anchors first, until the call's time runs out;
#    run b continues with BENCH_RESUME.
set -u
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/run.txt; }
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt; stamp prep
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for round in 1 2; do
  for alt in generic formula; do
    for s in "8191 4097" "4097 8191" "12345 6789" "8192 4096"; do
      set -- $s
      echo "== round $round $alt $1x$2"
      timeout 60 $b/host --backend gpu --cuda-c ab/$alt transpose --rows $1 --cols $2 --variant transpose_skewed --runs 30
    done
  done
done > $OUT/ab.txt 2>&1; echo "ab rc $?" >> $OUT/run.txt; stamp ab
python3 $b/pytorch/anchors.py > $OUT/pytorch.json 2> /tmp/anchors.txt; echo "anchors rc $?" >> $OUT/run.txt; stamp anchors
export BENCH_MEASURE_MS=400
export BENCH_FAMILIES=vec_add,shared_mem_add,conv2d,gather,reduce,reduce_max,row_sum,row_max,histogram,histogram_f32,scan,scan_i32,softmax,managed,bank_probe
left=$(( 585 - ($(date +%s) - t0) ))
CUDA_C_PTX=$b/cuda-c PYTORCH_JSON=$OUT/pytorch.json BENCH_JSON=$OUT/bench.json timeout -s INT $left $b/bench-kernels --bench > /tmp/bench.log 2>&1; echo "bench rc $? (limit $left s)" >> $OUT/run.txt; stamp bench
grep -v "^\s*$" /tmp/bench.log | grep -E "benches:|time:" | tail -400 > $OUT/bench.log
cat $OUT/run.txt
grep -E "^== |Rust/CUDA C" $OUT/ab.txt | paste - - | cut -c1-170
python3 -c "
import json,collections
d=json.load(open('$OUT/bench.json')); print(collections.Counter(c['family'] for c in d['cases']))"
