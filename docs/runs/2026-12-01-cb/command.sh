#!/usr/bin/env bash
# Run cb: change 98 (the multistage rungs' serpentine order) as committed: the matmul GPU suite;
# `host autotune --family matmul` for the carried profile; then the criterion benches of the matmul
# family (every rung from Rust and CUDA C, cuBLAS and PyTorch's mm, at the ten bench shapes, the
# chooser under the new profile) until the call's time runs out. The bench writes its JSON after
# each shape; run cc continues it with BENCH_RESUME.
set -u
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/run.txt; }
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt; stamp prep
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 120 $b/tests/host-gpu-test --include-ignored > /tmp/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" /tmp/tests.txt >> $OUT/run.txt; stamp tests
timeout 150 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt; stamp autotune
export BENCH_FAMILIES=matmul KERNELS_TILE_PROFILE=$OUT/tile-profile.json
python3 $b/pytorch/anchors.py > $OUT/pytorch.json 2> /tmp/anchors.txt; echo "anchors rc $?" >> $OUT/run.txt; stamp anchors
left=$(( 575 - ($(date +%s) - t0) ))
CUDA_C_PTX=$b/cuda-c PYTORCH_JSON=$OUT/pytorch.json BENCH_JSON=$OUT/bench.json timeout -s INT $left $b/bench-kernels --bench > /tmp/bench.log 2>&1; echo "bench rc $? (limit $left s)" >> $OUT/run.txt; stamp bench
grep -v "^\s*$" /tmp/bench.log | grep -E "benches:|time:" | tail -200 > $OUT/bench.log
cat $OUT/run.txt
grep -E "^\| matmul|fastest|chose" $OUT/autotune.txt | cut -c1-150 | tail -20
grep -c '"kernel"' $OUT/bench.json
