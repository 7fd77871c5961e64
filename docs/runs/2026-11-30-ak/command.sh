#!/usr/bin/env bash
# Run ak: the GPU suite for the families this session touched (vec_add, reduce, scan) with every
# managed, external and pipeline test, then the four compute-sanitizer tools over every kernel.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
{
for t in host-gpu-test host-gpu_external-test host-gpu_pipeline-test host-reduce-test; do
  echo "== $t"
  TEST_FAMILIES=vec_add,reduce,scan timeout 150 $b/tests/$t --include-ignored
done
} > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED" $OUT/tests.log > $OUT/run.txt
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
