#!/usr/bin/env bash
# Run j, part 4: correctness of this commit's matmul ladders on the GPU, with the one-row small-m
# kernels added. gpud/t (not in git): `cargo xtask gpu-bundle --for tests --tests host-gpu-test`.
# The GPU family suite for the three matmul families (edge and large shapes, every kernel), then
# compute-sanitizer's four tools on each small-m kernel at 12 × 1027 × 2051 (the element-wise path,
# row groups, k split three ways or more) and memcheck at 3 × 1024 × 2048 (the 16-byte path).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
gpud/t/run.sh $OUT unpack
x=/tmp/j; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
s=$(date +%s)
TEST_FAMILIES=matmul,matmul_tc,matmul_bf16 timeout 300 gpud/t/tests/host-gpu-test every_registered_kernel \
  --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "^test |test result|FAILED|panicked|TEST_FAMILIES" $OUT/tests.log | head
s=$(date +%s)
run() { compute-sanitizer --tool $1 --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1; echo "$1 $3 $4x$5x$6 rc $?"; }
for v in "matmul small_m1" "matmul small_m4" "matmul small_m8" "matmul-tc small_m1" "matmul-tc small_m4" "matmul-tc small_m8" "matmul-bf16 small_m1" "matmul-bf16 small_m4" "matmul-bf16 small_m8"; do
  set -- $v
  for tool in memcheck racecheck synccheck initcheck; do run $tool $1 $2 12 1027 2051; done
  run memcheck $1 $2 3 1024 2048
done > $OUT/sanitizer-rc.txt
echo "sanitizers in $(( $(date +%s) - s )) s"; awk '{print $NF}' $OUT/sanitizer-rc.txt | sort | uniq -c
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
