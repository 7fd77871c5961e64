#!/usr/bin/env bash
# Run d (2026-12-04): change 107 (raw pointers and numbers as written in the PTX entry) and the
# report of the first failed block, commit 395f514. gpud/ (not in git) holds the executables and
# PTX of `cargo xtask gpu-bundle --for tests` cut to the four test executables below
# (packed.tar.gz), the stripped release `host` of 62052e0 (host_before.gz) and the nvcc-made PTX of
# the three matmuls' CUDA C twins (twins_m).
# 1. the template project's stencil (views, GPU and emulator), the toolkit check, the reduce
#    tests, the special values;
# 2. the three matmuls change 106 had moved, before (62052e0) and now, each beside its twin,
#    median of 30, three rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/d; mkdir -p $x && tar -xzf gpud/packed.tar.gz -C $x && gunzip -c gpud/host_before.gz > $x/host_before && chmod +x $x/host_before
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for t in template-stencil-check-stencil-test toolkit-check-toolkit-test host-reduce-test host-special_values-test; do
  (cd $x && timeout 120 tests/$t --include-ignored) > $OUT/$t.log 2>&1
  echo "$t rc $?: $(grep -E '^test result' $OUT/$t.log)"
done
for round in 1 2 3; do
  for side in before now; do
    h=$x/host; [ $side = before ] && h=$x/host_before
    echo "== round $round $side"
    for v in matmul_double_buffered matmul_register_1d; do
      $h --backend gpu --cuda-c gpud/twins_m --runs 30 matmul --variant $v 2>&1 | grep -E "Rust/CUDA C|error"
    done
    $h --backend gpu --cuda-c gpud/twins_m --runs 30 matmul-bf16 --variant matmul_bf16_pipelined 2>&1 | grep -E "Rust/CUDA C|error"
  done
done 2>&1 | tee $OUT/ab_m.log
