#!/usr/bin/env bash
# Run ap: change 81, the rolling convolutions' bands cut from the device's resident blocks (one
# wave: 49 bands of 168 rows at 8192² for V = 4). conv2d demos V4/V8 beside their twins (which
# take the same grid), the conv2d autotune as JSON for the carried profile, the conv2d GPU suite,
# memcheck over every kernel.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8192 8192 5" "8192 8192 3" "8192 8192 7" "16384 16384 5" "4096 4096 5" "8191 4097 5"; do
  set -- $s
  for v in rolling_v4 rolling_v8; do
    timeout 60 $h conv2d --height $1 --width $2 --filter $3 --variant $v --runs 30
  done
  timeout 60 $b/host --backend gpu conv2d --height $1 --width $2 --filter $3 --variant auto --runs 30
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
timeout 120 $b/host --backend gpu autotune --family conv2d --out $OUT/profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=conv2d timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu smoke > /tmp/memcheck.txt 2>&1; echo "memcheck rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; grep "ERROR SUMMARY" /tmp/memcheck.txt >> $OUT/run.txt
cat $OUT/run.txt
grep -E "conv2d_rolling|Rust/CUDA C" $OUT/demos.txt | grep -v "^conv2d_rolling.*Rust/CUDA C" | cut -c1-130
grep -h "Rust/CUDA C" $OUT/demos.txt
tail -n 8 $OUT/autotune.txt
