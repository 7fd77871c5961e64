#!/usr/bin/env bash
# Run c: run b's benches continued on the same machine (its bundle, twins and bench JSON kept).
set -u
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/run.txt; }
b=target/gpu-bundle
echo "resuming from /tmp/bench-b.json" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export BENCH_MEASURE_MS=400 BENCH_RESUME=/tmp/bench-b.json
export BENCH_FAMILIES=histogram,histogram_f32,scan,scan_i32,softmax,transpose,managed,bank_probe
left=$(( 585 - ($(date +%s) - t0) ))
CUDA_C_PTX=$b/cuda-c BENCH_JSON=$OUT/bench.json timeout -s INT $left $b/bench-kernels --bench > /tmp/bench.log 2>&1; echo "bench rc $? (limit $left s)" >> $OUT/run.txt; stamp bench
grep -v "^\s*$" /tmp/bench.log | grep -E "benches:|time:" | tail -400 > $OUT/bench.log
cat $OUT/run.txt; tail -3 $OUT/bench.log
python3 -c "
import json,collections
d=json.load(open('$OUT/bench.json')); print(len(d['cases']), collections.Counter(c['family'] for c in d['cases']))"
