#!/usr/bin/env bash
# Run j, part 2: why the eight-row small-m kernels are slow at m = 16 (ncu on the Rust f32 kernel,
# its twin, and the bf16 kernel at 16 × 4096 × 4096), and the sweep of m again (part 1's filter
# kept cuBLAS's row instead of the small-m kernel's).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/j; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
for fv in "matmul small_m8 matmul_small_m8" "matmul small_m8 matmul_small_m8_cuda" "matmul-bf16 small_m8 matmul_bf16_small_m8" "matmul small_m4 matmul_small_m4"; do
  set -- $fv
  m=16; [ $2 = small_m4 ] && m=4
  timeout 60 ncu --clock-control none --kernel-name $3 --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 3 $1 --m $m --n 4096 --k 4096 --variant $2 > $OUT/ncu-$3.txt 2>&1
  echo "ncu $3 rc $?"
done
s=$(date +%s)
for nk in "4096 4096" "28672 4096"; do
  n=${nk% *}; k=${nk#* }
  for m in 1 2 4 5 8 12 16; do
    for family in matmul matmul-tc matmul-bf16; do
      echo "-- $family m=$m n=$n k=$k"
      $x/host_now --backend gpu --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m8 2>&1 | rows
      [ $m -le 4 ] && $x/host_now --backend gpu --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m4 2>&1 | rows | grep small_m4
    done
  done
done > $OUT/sweep.log 2>&1
echo "sweep in $(( $(date +%s) - s )) s"
