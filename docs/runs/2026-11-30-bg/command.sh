#!/usr/bin/env bash
# Run bg: after a refactor of the wgmma rungs (one Block type for their preamble), the checks of run be again. As run bd: change 63 (the overlap no longer serialised by ptxas) and rung 5 (setmaxnreg, a producer
# warpgroup, overlapped consumers). The GPU suite for attention and attention_causal; the demos at
# b8 h16 s4096 (d128 both masks, d64); memcheck and racecheck over every kernel's smoke launch.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=attention,attention_causal timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
echo "tests rc $?" > $OUT/run.txt
grep -E "test result|FAILED|panicked" $OUT/tests.log >> $OUT/run.txt
for demo in "attention" "attention-causal" "attention --dim 64"; do
  timeout 60 $b/host --backend gpu $demo --runs 10 >> $OUT/perf.txt 2>&1
  echo "$demo rc $?" >> $OUT/run.txt
done
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
