#!/usr/bin/env bash
# Run e (2026-12-04): change 108 (the transpose, row, histogram and gather families on views).
# gpud/ (not in git): packed.tar.gz, the executables and PTX of `cargo xtask gpu-bundle --for
# tests` cut to the test executables below, with this commit's `host`; host_before.gz, the
# stripped release `host` of 62052e0 (these families' kernels then as at 395f514); tw_before and
# tw_now, the nvcc-made PTX (CUDA 13.0.88, -O3) of their CUDA C twins before and after the twins
# took (pointer, length) pairs.
# 1. every family against its twin, before and now, median of 30, two rounds: transposes at 8192²
#    and 8191×4097, row sums and maxima at 65536 × 1024, both histograms, gather;
# 2. special values; the reduce tests; the four sanitizers on `smoke`;
# 3. the GPU suite's tests of every registered kernel (host-gpu-test every_registered_kernel: the
#    reference at edge and large sizes, and the fit on an SM); its managed-memory tests left out.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/e; mkdir -p $x && tar -xzf gpud/packed.tar.gz -C $x && gunzip -c gpud/host_before.gz > $x/host_before && chmod +x $x/host_before
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for round in 1 2; do
  for side in before now; do
    h=$x/host; tw=gpud/tw_now; [ $side = before ] && { h=$x/host_before; tw=gpud/tw_before; }
    echo "== round $round $side"
    for args in "transpose" "transpose --rows 8191 --cols 4097" "row-sum" "row-max" "histogram" "histogram-f32" "gather"; do
      $h --backend gpu --cuda-c $tw --runs 30 $args 2>&1 | grep -E "Rust/CUDA C|error|fail"
    done
  done
done 2>&1 | tee $OUT/ab.log
for t in host-special_values-test host-reduce-test; do
  (cd $x && timeout 120 tests/$t --include-ignored) > $OUT/$t.log 2>&1
  echo "$t rc $?: $(grep -E '^test result' $OUT/$t.log)"
done
for tool in memcheck racecheck synccheck initcheck; do
  timeout 60 compute-sanitizer --tool $tool $x/host --backend gpu smoke > $OUT/sanitizer-$tool.log 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitizer-$tool.log) $(grep -c '| pass' $OUT/sanitizer-$tool.log) pass, $(grep -cE '\| (fail|FAIL)' $OUT/sanitizer-$tool.log) fail"
done
s=$(date +%s)
(cd $x && timeout 300 tests/host-gpu-test --include-ignored every_registered_kernel) > $OUT/gpu-test.log 2>&1
echo "host-gpu-test rc $? in $(( $(date +%s) - s )) s: $(grep -E '^test result' $OUT/gpu-test.log)"
grep -E "FAILED|panicked" $OUT/gpu-test.log | head -5
