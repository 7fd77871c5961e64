#!/usr/bin/env bash
# Run k, part 2: correctness of this commit's matmul ladders on the GPU. gpud/t (not in git):
# `cargo xtask gpu-bundle --for tests --tests host-gpu-test`. The GPU family suite for the three
# matmul families (edge shapes, several of which the persistent rungs now cut into runs of k, and
# large ones), then compute-sanitizer's four tools on the two changed rungs at 12 × 1027 × 2051
# (bf16: the cp.async fallback, 5 tiles in 4 runs; TF32: 9 tiles in 8 runs) and memcheck and
# racecheck at 16 × 4096 × 11008 (TMA, 16 tiles in 8 runs; TF32 32 in 4).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
gpud/t/run.sh $OUT unpack
x=/tmp/k; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
s=$(date +%s)
TEST_FAMILIES=matmul,matmul_tc,matmul_bf16 timeout 300 gpud/t/tests/host-gpu-test every_registered_kernel \
  --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "^test |test result|FAILED|panicked|TEST_FAMILIES" $OUT/tests.log | head
s=$(date +%s)
run() { timeout 120 compute-sanitizer --tool $1 --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1; echo "$1 $3 $4x$5x$6 rc $?"; }
for v in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $v
  for tool in memcheck racecheck synccheck initcheck; do run $tool $1 $2 12 1027 2051; done
  run memcheck $1 $2 16 4096 11008
  run racecheck $1 $2 16 4096 11008
done > $OUT/sanitizer-rc.txt
echo "sanitizers in $(( $(date +%s) - s )) s"; cat $OUT/sanitizer-rc.txt
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
