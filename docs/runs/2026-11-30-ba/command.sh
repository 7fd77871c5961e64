#!/usr/bin/env bash
# Run ba: changes 61 (fewer instructions per score) and 62 (the TMA producer warp). The GPU suite for attention and attention_causal;
# the demos at b8 h16 s4096 (d128 both masks, d64); the PyTorch extension's tests and benchmark
# (attention against scaled_dot_product_attention in the same run); memcheck and racecheck.
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
timeout 240 bash $b/run.sh $OUT/torch torch > $OUT/torch-run.log 2>&1
echo "torch rc $?" >> $OUT/run.txt
for tool in memcheck racecheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
