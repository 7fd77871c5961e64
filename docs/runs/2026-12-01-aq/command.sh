#!/usr/bin/env bash
# Run aq: the code as committed after changes 79-81 (change 81 reverted; the rolling kernels now
# wait for every copy before a warp leaves; V = 8 keeps its past-the-band test): the conv2d GPU
# suite, memcheck and racecheck over every kernel, V4/V8 demos at 8192² 5×5 and 8191×4097 5×5 and
# `--variant auto` (no twins: runs an and ap had them).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/unpacked unpack > /tmp/unpack.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=conv2d timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
{
for s in "8192 8192 5" "8191 4097 5" "8192 8192 7"; do
  set -- $s
  for v in conv2d_rolling_v4 conv2d_rolling_v8 auto; do
    timeout 60 $b/host --backend gpu conv2d --height $1 --width $2 --filter $3 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1; echo "$tool rc $?" >> $OUT/run.txt
done
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
cat $OUT/run.txt
grep -E "conv2d_rolling" $OUT/demos.txt | cut -c1-120
