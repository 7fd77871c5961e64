#!/usr/bin/env bash
# Run 2026-12-07 j: issue 38, perf log change 155: the bf16 128×256 tiles in clusters in `auto`.
# Part 1 was run 2026-12-06 i's part 2 (`bash docs/runs/2026-12-06-i/command.sh 2`, gpud/host_now.gz
# and gpud/host_b.gz built from 2386573) and the special-values tests on the GPU
# (`gpud/t/tests/host-special_values-test on_the_gpu --include-ignored`); part 2 timed the
# persistent and clustered 128×256 tiles twice each and `auto` at nine large shapes (the loop
# below, `bash docs/runs/2026-12-07-j/command.sh 2`).
# Part 3 (`... command.sh 3`, carry ["gpud"]): gpud/host_now.gz and gpud/bt (the wheel,
# `cargo xtask gpu-bundle --for torch --out gpud/bt`) built from the tree that takes the clustered
# tiles in `auto` where k is long over many waves. Its steps, most important first:
#   1: `auto` beside the persistent and clustered 128×256 tiles and cuBLAS where the rule moves;
#   2: the model-shape suite's bf16 products against PyTorch (bf16 and f32 C);
#   3: Nsight Compute: cuBLAS's kernels (launch shape, cluster, registers, warp states) beside
#      ours at 8192^3, 2048 x 4096 x 4096 and 512 x 4096 x 11008.
# Part 4 (`... command.sh 4`, same bundle): where the warps of the 128×128 tile and cuBLAS's stall
# at 512 x 4096 x 11008 (the same tile, ring and block on both sides; one tile per block, k whole):
# Nsight Compute's stall reasons by PC sampling, and the SASS lines most sampled; then f32 and
# TF32 at 8192^3 against cuBLAS (the issue's targets, not measured since 2026-12-02); the swapped
# rung at 48 and 64 rows beside `auto`'s tiles. First, where
# gpud/host_c.gz is there (the commit with warp-arrivals.patch: the unclustered TMA tiles'
# consumers arrive on a slot's empty barrier once per warp, not once per thread), it against the
# commit.
set -u
part=${1:-3}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
[ -x $x/host_now ] || { gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now; }
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
timed() { # family m n k variant...
  local f=$1 m=$2 n=$3 k=$4 v; shift 4
  for v in "$@"; do
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | sed "s/^/$f /"
  done
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
if [ "$part" = 2 ]; then
  for shape in "8192 8192 28672" "4096 28672 8192" "4096 4096 4096" "12608 4096 1024" "2048 11008 4096" "4096 11008 4096" "1024 4096 4096" "12608 768 3072" "8192 4096 14336"; do
    set -- $shape; echo "-- $shape"
    timed matmul-bf16-rounded $1 $2 $3 persistent clustered persistent clustered auto
  done
  exit 0
fi
if [ "$part" = 4 ]; then
  if [ -f gpud/host_c.gz ]; then
    gunzip -c gpud/host_c.gz > $x/host_c && chmod +x $x/host_c
    echo "-- warp-arrivals.patch (c) against the commit (now), alternated c, now, c"
    for shape in "512 4096 11008" "2048 4096 4096" "8192 8192 8192"; do
      set -- $shape; echo "-- m=$1 n=$2 k=$3"
      for side in c now c; do
        for v in persistent_128x128 persistent; do
          timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant $v 2>&1 | rows | sed "s/^/$side /"
        done
      done
    done
  fi
  for v in persistent_128x128; do
    timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --print-details all --metrics regex:smsp__pcsamp_warps_issue_stalled_[a-z_]+$ -k regex:"matmul_bf16_rounded_$v\$|nvjet" $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --m 512 --n 4096 --k 11008 --variant $v > $OUT/ncu-stalls-$v.txt 2>&1
    echo "-- ncu stalls $v rc $?"
    grep -E "^  [a-zA-Z_0-9]+.*\(|smsp__pcsamp_warps_issue_stalled" $OUT/ncu-stalls-$v.txt | awk '$NF+0 > 0 || /\(/' | head -70
  done
  echo "-- 8192^3: f32 and TF32 (auto) against cuBLAS, twice"
  for f in matmul matmul-tc matmul matmul-tc; do timed $f 8192 8192 8192 auto; done
  echo "-- 33-64 rows: the swapped rung in row groups beside auto's tile"
  for shape in "48 4096 4096" "64 12288 4096" "64 4096 11008" "64 2304 768"; do
    set -- $shape; timed matmul-bf16-rounded $1 $2 $3 swapped auto
  done
  exit 0
fi
step 1
for shape in "8192 8192 8192" "8192 8192 28672" "4096 28672 8192" "8192 10240 8192"; do
  set -- $shape; echo "-- m=$1 n=$2 k=$3"
  timed matmul-bf16-rounded $1 $2 $3 auto persistent clustered auto persistent clustered
  timeout 60 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | grep -iE "auto|chose|why" | head -3
done
echo "-- f32 C"; timed matmul-bf16 8192 8192 8192 auto persistent clustered
step 2
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH=/tmp/site:gpud/bt/python timeout 110 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
step 3
for shape in "8192 8192 8192 clustered" "2048 4096 4096 persistent" "512 4096 11008 clustered"; do
  set -- $shape
  timeout 100 ncu --clock-control none --section LaunchStats --section Occupancy --section WarpStateStats --section SpeedOfLight -k regex:"matmul_bf16_rounded_$4\$|sm90|nvjet|gemm|cutlass" $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant $4 > $OUT/ncu-$1x$2x$3.txt 2>&1
  echo "-- ncu $1x$2x$3 rc $?"
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Grid Size|Block Size|Cluster Size|Registers Per|Shared Memory Configuration Size|Dynamic Shared|Warp Cycles Per Issued|Stall" $OUT/ncu-$1x$2x$3.txt | head -60
done
step end
