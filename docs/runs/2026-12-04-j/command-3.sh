#!/usr/bin/env bash
# Run j, part 3: the small-m kernels with A's values loaded a step ahead beside B's (part 2's ncu:
# the warps stalled on L1 for most cycles, and the time grew with m), four rows per block letting
# two blocks reside and eight one. The sweep of m (1-16) at 4096 × 4096 and 28672 × 4096, each
# kernel beside its twin, and `host models` on the decode products (1 and 16 tokens).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/j; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
s=$(date +%s)
for nk in "4096 4096" "28672 4096"; do
  n=${nk% *}; k=${nk#* }
  for m in 1 2 4 8 12 16; do
    for family in matmul matmul-tc matmul-bf16; do
      echo "-- $family m=$m n=$n k=$k"
      $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m8 2>&1 | rows
      [ $m -le 4 ] && $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m4 2>&1 | rows | grep small_m4
    done
  done
done > $OUT/sweep.log 2>&1
echo "sweep in $(( $(date +%s) - s )) s"
for dtype in f32 tf32 bf16; do
  s=$(date +%s)
  timeout 100 $x/host_now --backend gpu --warmup 2 --runs 10 models --dtypes $dtype --tokens 1,16 \
    --json-out $OUT/models-$dtype.json > $OUT/models-$dtype.log 2>&1
  echo "models $dtype rc $? in $(( $(date +%s) - s )) s"; tail -1 $OUT/models-$dtype.log
done
