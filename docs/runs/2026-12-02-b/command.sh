#!/usr/bin/env bash
# Run b: change 99 (the skewed transpose's output-item formula, the faster schedule of run a) and
# the bench's check before timing (run a's histogram failure): the transpose and histogram GPU
# suites, then run a's benches continued (BENCH_RESUME) with the families it had not reached,
# transpose among them, until the call's time runs out; run c continues from /tmp/bench-b.json.
set -u
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/run.txt; }
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt; stamp prep
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=transpose,histogram,histogram_f32 timeout 120 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; stamp tests
export BENCH_MEASURE_MS=400 BENCH_RESUME=docs/runs/2026-12-02-a/bench.json
export BENCH_FAMILIES=histogram,histogram_f32,scan,scan_i32,softmax,transpose,managed,bank_probe
left=$(( 585 - ($(date +%s) - t0) ))
CUDA_C_PTX=$b/cuda-c BENCH_JSON=$OUT/bench.json timeout -s INT $left $b/bench-kernels --bench > /tmp/bench.log 2>&1; echo "bench rc $? (limit $left s)" >> $OUT/run.txt; stamp bench
cp $OUT/bench.json /tmp/bench-b.json
grep -v "^\s*$" /tmp/bench.log | grep -E "benches:|time:" | tail -400 > $OUT/bench.log
cat $OUT/run.txt; tail -3 $OUT/bench.log
python3 -c "
import json,collections
d=json.load(open('$OUT/bench.json')); print(len(d['cases']), collections.Counter(c['family'] for c in d['cases']))"
