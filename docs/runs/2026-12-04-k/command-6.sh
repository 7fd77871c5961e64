#!/usr/bin/env bash
# Run k, part 6: compute-sanitizer on the committed rungs (4718698: bands only where C is wide, runs
# of k only within one wave), our kernels only, at shapes that cut k into runs: 12 × 1027 × 2051
# (all four tools), 16 × 4096 × 11008 and 128 × 11008 × 4096 (bf16: 43 tiles in three runs; TF32: 86
# tiles, not cut) under memcheck and racecheck. Part 5's racecheck of the multi-wave form stopped on
# a sanitizer-internal error at 128 × 11008 × 4096; this says whether the committed form does too.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
run() { timeout 100 compute-sanitizer --tool $1 --kernel-name kns=matmul_ --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1; echo "$1 $3 $4x$5x$6 rc $?"; }
for v in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $v
  for tool in memcheck racecheck synccheck initcheck; do run $tool $1 $2 12 1027 2051; done
  for mnk in "16 4096 11008" "128 11008 4096"; do
    run memcheck $1 $2 $mnk
    run racecheck $1 $2 $mnk
  done
done > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Internal" $OUT/sanitizer.txt | sort | uniq -c
