#!/usr/bin/env bash
# Run j (2026-12-04): issue 38's small-m kernels (perf log change 112), part 1: speed.
# gpud/ (not in git): host_now.gz, this commit's stripped release `host`; host_before.gz, 9d0778c's
# (run i's chooser, before the small-m kernels); tw/, the nvcc-made PTX (CUDA 13.0.88, -O3) of the
# CUDA C twins. `host models` over the decode products (1 and 16 tokens) of every dtype against
# cuBLAS; a sweep of m at 4096 × 4096 and 28672 × 4096 (n × k) of the small-m kernel against the
# tile kernels `auto` took before, to place the bound between them; each small-m kernel beside its
# twin.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/j; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for dtype in f32 tf32 bf16; do
  s=$(date +%s)
  timeout 100 $x/host_now --backend gpu --warmup 2 --runs 10 models --dtypes $dtype --tokens 1,16 \
    --json-out $OUT/models-$dtype.json > $OUT/models-$dtype.log 2>&1
  echo "models $dtype rc $? in $(( $(date +%s) - s )) s"; tail -1 $OUT/models-$dtype.log
done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
s=$(date +%s)
for nk in "4096 4096" "28672 4096"; do
  n=${nk% *}; k=${nk#* }
  for m in 1 8 16 24 32 64; do
    for family in matmul matmul-tc matmul-bf16; do
      echo "-- $family m=$m n=$n k=$k"
      $x/host_before --backend gpu --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant auto 2>&1 | rows
      $x/host_now --backend gpu --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m8 2>&1 | rows | head -1
      [ $m -le 4 ] && $x/host_now --backend gpu --warmup 2 --runs 10 $family --m $m --n $n --k $k --variant small_m4 2>&1 | rows | head -1
    done
  done
done > $OUT/sweep.log 2>&1
echo "sweep in $(( $(date +%s) - s )) s"
for fv in "matmul small_m4 1" "matmul small_m8 16" "matmul-tc small_m4 1" "matmul-tc small_m8 16" "matmul-bf16 small_m4 1" "matmul-bf16 small_m8 16"; do
  set -- $fv
  $x/host_now --backend gpu --cuda-c gpud/tw --runs 20 $1 --m $3 --n 4096 --k 4096 --variant $2 2>&1 | rows
done > $OUT/twins.log 2>&1
cat $OUT/twins.log
