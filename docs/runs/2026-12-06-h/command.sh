#!/usr/bin/env bash
# Run 2026-12-06 h: issue 38, the bf16 ladders' swapped-role rung (Cᵀ = Bᵀ·Aᵀ on wgmma m64n16k16,
# B streamed by TMA) for A of up to 16 rows; and what run g's part 3 never ran (the products'
# careful path on views and bad operands, the tensor maps' cache under 4200 pairs of operands
# queued behind a busy GPU).
# Two calls, carry ["gpud"] (not in git): `bash docs/runs/2026-12-06-h/command.sh 1` (or 2).
# Part 1's steps:
#   1: the GPU suite of both bf16 families and the special-value tests;
#   2: compute-sanitizer (memcheck, racecheck, synccheck) on the new rung, ours only;
#   3: the rung beside the persistent tiles, the small-m rungs and cuBLAS at decoding's shapes;
#   4: the wheel (`auto` taking the new rung at 5-16 rows on sm_90a): the extension's matmul
#      tests, then the model-shape suite's bf16 and bf16-f32 products against PyTorch.
# Part 2: the rung's runs of k cut shorter (gpud/host_a.gz: MIN_RUN one ring, 384 rows, and a
#   fixed cost of 128 rows, built from this tree with those two constants changed) beside part 1's
#   (768 and 256) at decoding's shapes, 2-16 rows; racecheck on the rung through the extension
#   (racecheck.py: no cuBLAS in the process); the rung at 32-64 rows beside auto's tile.
# Part 3 (cut from part 2 to fit the session's last device time): the SM clock and power while
#   the suite's worst bf16 product (8192 x 8192 x 28672) runs, ours and cuBLAS's; the three
#   persistent tiles at the 512-row products.
# Bundles: `cargo build --release -p host`, stripped and gzipped to gpud/host_now.gz;
# `cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t`;
# `cargo xtask wheel && cargo xtask gpu-bundle --for torch --out gpud/bt`.
set -u
part=${1:-1}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
for side in now a; do [ -f gpud/host_$side.gz ] && { [ -x $x/host_$side ] || { gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; }; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
timed() { # family m n k variant...
  local f=$1 m=$2 n=$3 k=$4; shift 4
  for v in "$@"; do
    timeout 60 $x/host_${side:-now} --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | sed "s/^/$f /"
  done
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
start=$(date +%s)
if [ "$part" = 2 ]; then
  step racecheck
  python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 python3 $(dirname "$0")/racecheck.py > $OUT/racecheck.txt 2>&1
  echo "racecheck rc $?"; grep -E "max relative|SUMMARY|Error" $OUT/racecheck.txt | head
  step runs
  for shape in "16 4096 4096" "16 6144 4096" "16 12288 4096" "8 4096 4096" "4 4096 4096" "4 12288 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    for side in now a; do timed matmul-bf16-rounded $1 $2 $3 swapped | sed "s/^/$side /"; done
  done
  side=now timed matmul-bf16 16 4096 4096 swapped; side=a timed matmul-bf16 16 4096 4096 swapped | sed "s/^/a /"
  echo "-- 32-64 rows: the rung in row groups (B read again, from the L2) beside auto's tile"
  for shape in "32 4096 4096" "64 4096 4096" "32 12288 4096"; do
    set -- $shape; side=now timed matmul-bf16-rounded $1 $2 $3 swapped auto
  done
  echo "-- m<=4, the small-m rungs"
  side=now timed matmul-bf16-rounded 4 4096 4096 small_m4; side=now timed matmul-bf16-rounded 4 12288 4096 small_m4
  step end
  exit 0
fi
if [ "$part" = 3 ]; then
  step clocks
  for v in long cube; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks-$v.csv &
    smi=$!
    if [ $v = long ]; then timed matmul-bf16-rounded 8192 8192 28672 auto; else timed matmul-bf16-rounded 8192 8192 8192 auto; fi
    kill $smi
    echo "$v: SM MHz, W while running (min/median/max):"; awk -F', ' '{print $2+0, $3+0}' $OUT/clocks-$v.csv | sort -n | awk '{c[NR]=$1; p[NR]=$2} END {print c[1], c[int(NR/2)+1], c[NR], "|", p[int(NR/2)+1]}'
  done
  step tiles
  for shape in "512 4096 11008" "512 4096 4096" "12608 768 768"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    side=now timed matmul-bf16-rounded $1 $2 $3 auto persistent_128x64 persistent_128x128 persistent
  done
  step end
  exit 0
fi
step 1
[ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=matmul_bf16,matmul_bf16_rounded timeout 150 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked|swapped" $OUT/tests-gpu.log | head -20
s=$(date +%s)
timeout 100 gpud/t/tests/host-special_values-test --include-ignored > $OUT/tests-special.log 2>&1
echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
step 2
san() { # tool family m n k
  timeout 60 compute-sanitizer --tool $1 --kernel-name kns=swapped --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant swapped --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
  echo "$1 $2 $3x$4x$5 rc $?"
}
for tool in memcheck racecheck synccheck; do
  san $tool matmul-bf16 13 1000 2051; san $tool matmul-bf16-rounded 16 4096 4096; san $tool matmul-bf16-rounded 33 1001 3001
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
step 3
for shape in "16 4096 4096" "16 6144 4096" "16 11008 4096" "16 12288 4096" "16 4096 11008" "16 4096 14336" "16 8192 8192" "16 10240 8192" "16 28672 4096" "16 28672 8192"; do
  set -- $shape; echo "-- m=$1 n=$2 k=$3"
  timed matmul-bf16-rounded $1 $2 $3 swapped persistent_128x128
  timed matmul-bf16 $1 $2 $3 swapped
done
for shape in "1 4096 4096" "4 4096 4096" "8 4096 4096" "12 4096 4096" "1 12288 4096" "4 12288 4096" "8 12288 4096" "1 50257 768" "32 4096 4096"; do
  set -- $shape; echo "-- m=$1 n=$2 k=$3"
  timed matmul-bf16-rounded $1 $2 $3 swapped auto
done
step 4
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH=/tmp/site:gpud/bt/python timeout 120 python3 -m unittest discover -s gpud/bt/python/tests -k matmul -v > $OUT/unittest.log 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR)|\.\.\. " $OUT/unittest.log | head -20; tail -3 $OUT/unittest.log
s=$(date +%s)
PYTHONPATH=/tmp/site:gpud/bt/python timeout 100 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
step end
