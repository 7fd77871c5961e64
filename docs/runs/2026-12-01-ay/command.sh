#!/usr/bin/env bash
# Run ay: the transposes as committed (transpose_skewed alone, non-generic; `auto` takes it where
# rows or cols is not a multiple of 4): the transpose GPU suite, memcheck and racecheck on the
# skewed kernel (interior and edge blocks), t64, peeled and skewed beside their twins, and `auto`.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8191 4097" "4097 8191" "12345 6789" "8192 4096" "16384 16384"; do
  set -- $s
  for v in transpose_vectorized_t64 transpose_peeled transpose_skewed auto; do
    timeout 60 $h transpose --rows $1 --cols $2 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
TEST_FAMILIES=transpose timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
for tool in memcheck racecheck; do
  for s in "1000 777" "8191 4097"; do
    set -- $s
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu transpose --rows $1 --cols $2 --variant transpose_skewed --runs 1 >> $OUT/sanitizer.txt 2>&1; echo "$tool $1x$2 rc $?" >> $OUT/run.txt
  done
done
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
grep -iE "error|fail" $OUT/prep.txt | head -5 >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^\| transpose|Rust/CUDA C|auto" $OUT/demos.txt | cut -c1-140
