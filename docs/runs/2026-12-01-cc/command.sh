#!/usr/bin/env bash
# Run cc: run cb's matmul benches continued (BENCH_RESUME=its bench.json, copied into the tree),
# under run cb's profile, until the shapes are done or the call's time runs out.
set -u
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/run.txt; }
b=target/gpu-bundle
prev=docs/runs/2026-12-01-cb
if [ -d $b/cuda-c ] && [ -e $b/.unpacked ]; then echo "prep kept from run cb" > $OUT/run.txt; else bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt; fi; stamp prep
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export BENCH_FAMILIES=matmul KERNELS_TILE_PROFILE=$prev/tile-profile.json BENCH_RESUME=$prev/bench.json
left=$(( 580 - ($(date +%s) - t0) ))
CUDA_C_PTX=$b/cuda-c BENCH_JSON=$OUT/bench.json timeout -s INT $left $b/bench-kernels --bench > /tmp/bench.log 2>&1; echo "bench rc $? (limit $left s)" >> $OUT/run.txt; stamp bench
grep -v "^\s*$" /tmp/bench.log | grep -E "benches:|time:" | tail -300 > $OUT/bench.log
cat $OUT/run.txt
grep -c '"kernel"' $OUT/bench.json
