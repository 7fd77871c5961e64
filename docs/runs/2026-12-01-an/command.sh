#!/usr/bin/env bash
# Run an: change 79 (conv2d rolling rows: fewer instructions per row; every cp.async addressed from
# its shared region's base) and change 80 (thrashing's ninth way: vec_add writes mapped pinned
# memory, read as it lands). conv2d demos V4/V8 beside their twins, the conv2d autotune, the
# thrashing table, the other cp.async kernels beside their twins, the GPU suite for every family
# with a cp.async kernel plus the thrashing and managed tests, memcheck on every kernel.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8192 8192 5" "8192 8192 3" "8192 8192 7" "16384 16384 5" "4096 4096 5" "8191 4097 5"; do
  set -- $s
  for v in rolling_v4 rolling_v8; do
    timeout 60 $h conv2d --height $1 --width $2 --filter $3 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
timeout 150 $b/host --backend gpu managed thrashing --json-out $OUT/thrashing.json > $OUT/thrashing.txt 2>&1; echo "thrashing rc $?" >> $OUT/run.txt
{
timeout 60 $h matmul --m 4096 --n 4096 --k 4096 --variant matmul_double_buffered --runs 20
timeout 60 $h matmul-tc --m 4096 --n 4096 --k 4096 --variant all --runs 20
timeout 60 $h matmul-bf16 --m 4096 --n 4096 --k 4096 --variant matmul_bf16_pipelined --runs 20
timeout 60 $h scan --n 268435456 --variant scan_look_back_pipelined --runs 20
timeout 60 $h attention --variant attention_flash --runs 20
} > $OUT/others.txt 2>&1
echo "others rc $?" >> $OUT/run.txt
timeout 120 $b/host --backend gpu autotune --family conv2d > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=conv2d,matmul,matmul_tc,matmul_bf16,scan,scan_i32,attention,attention_causal timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu smoke > $OUT/memcheck.txt 2>&1; echo "memcheck rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; grep "ERROR SUMMARY" $OUT/memcheck.txt >> $OUT/run.txt
cat $OUT/run.txt
grep -E "GB/s|TFLOP|rolling|ms" $OUT/demos.txt | head -80
