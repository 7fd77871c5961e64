#!/usr/bin/env bash
# Run f (2026-12-04): change 109 (the element-wise family on views). gpud/ (not in git):
# host_now.gz, this commit's stripped release `host`; host_before.gz, 62052e0's; tw_before and
# tw_now, the nvcc-made PTX (CUDA 13.0.88, -O3) of vec_add, vec_add_vectorized and shared_mem_add's
# twins before and after they took (pointer, length) pairs.
# 1. vec-add and shared-mem-add, before and now beside their twins, median of 30, two rounds;
# 2. the managed demo (vec_add on managed memory, through views now), checked.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/f; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for round in 1 2; do
  for side in before now; do
    echo "== round $round $side"
    for cmd in vec-add shared-mem-add; do
      $x/host_$side --backend gpu --cuda-c gpud/tw_$side --runs 30 $cmd 2>&1 | grep -E "Rust/CUDA C|error|fail"
    done
  done
done 2>&1 | tee $OUT/ab.log
timeout 90 $x/host_now --backend gpu managed > $OUT/managed.log 2>&1; echo "managed rc $?"
grep -E "\| (pass|fail)|error" $OUT/managed.log | head -12
