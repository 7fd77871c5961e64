#!/usr/bin/env bash
# Run l (2026-12-04): issue 38, perf log change 114 (the bf16 wgmma rungs store C 16 bytes at a
# time: lanes 2q and 2q + 1 of a quad swap a pair of sums by a shuffle so that each holds four
# consecutive columns), part 1: correctness and speed. gpud/ (not in git): host_now.gz, this
# commit's stripped release `host`; host_before.gz, 4718698's (run k's; its kernels are 97aaee2's);
# t/, the GPU test bundle; tw/, the nvcc-made PTX (CUDA 13.0.88, -O3) of the CUDA C twins.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/l; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=matmul_bf16 timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored \
  > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
run() { timeout 60 compute-sanitizer --tool $1 --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16 --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1; echo "$1 $2 $3x$4x$5 rc $?"; }
{ for v in persistent wgmma; do run memcheck $v 130 1028 520; run memcheck $v 33 31 130; done
  run memcheck persistent 16 4096 11008; run racecheck persistent 12 1027 2051; run initcheck persistent 130 1028 520; } \
  > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
s=$(date +%s)
for mnk in "12608 768 768" "16384 3072 768" "12608 3072 1024" "4096 4096 1024" "512 4096 4096" "2048 11008 4096" \
           "8192 28672 4096" "8192 8192 8192" "128 11008 4096" "16 4096 11008" "1024 50257 768"; do
  set -- $mnk
  echo "-- m=$1 n=$2 k=$3"
  for side in before now before now; do
    $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows | sed "s/^/$side /"
  done
done > $OUT/before-after.log 2>&1
echo "before/after in $(( $(date +%s) - s )) s"
for mnk in "12608 768 768" "8192 8192 8192"; do
  set -- $mnk
  $x/host_now --backend gpu --cuda-c gpud/tw --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows
done > $OUT/twins.log 2>&1
cat $OUT/twins.log
