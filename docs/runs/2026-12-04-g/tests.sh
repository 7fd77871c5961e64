#!/usr/bin/env bash
# Run g, second call: gpud/packed.tar.gz holds `cargo xtask gpu-bundle --for tests --tests
# host-gpu-test,host-special_values-test,host-families-test` at this commit.
# 1. special values (softmax's -inf rows among them); the four sanitizers on `smoke`;
# 2. the GPU suite's tests of every registered kernel (host-gpu-test every_registered_kernel);
# 3. the pipelined and staged scans again, before and now (round 2, median of 30): the first
#    call's round 2 did not finish within the call's ten minutes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/g2; mkdir -p $x && tar -xzf gpud/packed.tar.gz -C $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
(cd $x && timeout 120 tests/host-special_values-test --include-ignored) > $OUT/special.log 2>&1
echo "special values rc $?: $(grep -E '^test result' $OUT/special.log)"
for tool in memcheck racecheck synccheck initcheck; do
  timeout 60 compute-sanitizer --tool $tool $x/host --backend gpu smoke > $OUT/sanitizer-$tool.log 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitizer-$tool.log) $(grep -c '| pass' $OUT/sanitizer-$tool.log) pass, $(grep -cE '\| (fail|FAIL)' $OUT/sanitizer-$tool.log) fail"
done
s=$(date +%s)
(cd $x && timeout 300 tests/host-gpu-test --include-ignored every_registered_kernel) > $OUT/gpu-test.log 2>&1
echo "host-gpu-test rc $? in $(( $(date +%s) - s )) s: $(grep -E '^test result' $OUT/gpu-test.log)"
grep -E "FAILED|panicked" $OUT/gpu-test.log | head -5
for round in 2; do
  for side in before now; do
    echo "== round $round $side"
    for args in "scan --variant scan_look_back_pipelined" "scan --variant scan_look_back_staged" \
                "scan-i32 --variant scan_look_back_pipelined_i32" "scan-i32 --variant scan_look_back_staged_i32"; do
      echo "-- $args"
      $x/host_$side --backend gpu --cuda-c gpud/tw_$side --runs 30 $args 2>&1 | grep -E "Rust/CUDA C|error|fail"
    done
  done
done 2>&1 | tee $OUT/ab2.log
