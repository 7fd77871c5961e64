#!/usr/bin/env bash
# Run 2026-12-06 i: issue 38, perf log change 154: the bf16 persistent tiles in clusters of two
# (`matmul_bf16_clustered`, `_clustered_128x128` and their bf16-C forms: two tiles one above
# the other, B's part of each step copied once by TMA multicast into both blocks); and run h's
# parts 2 and 3, which found no device.
# Calls with carry ["gpud"] (not in git): `bash docs/runs/2026-12-06-i/command.sh 1` (or 2).
# Part 1's steps, most important first:
#   1: the GPU suite of both bf16 families (the new rungs at every edge shape);
#   2: compute-sanitizer (memcheck, racecheck, synccheck) on the clustered rungs, ours only;
#   3: the clustered rungs beside the persistent ones and cuBLAS, bf16 C and f32 C;
#   4: run h's part 3: SM clock and power during 8192 x 8192 x 28672 and 8192^3;
#   5: run h's part 2: racecheck on the swapped rung through the extension (no cuBLAS in the
#      process), and the swapped rung's runs of k cut shorter (gpud/host_a.gz).
# Part 2 (not run: the session's device time ran out; for the next session): the clustered rungs
#   as committed (consumers arrive on the other block's barrier with the default release at the
#   block's scope, as CUTLASS does: the release at the cluster's scope put a MEMBAR.ALL.GPU
#   before every arrival, each step of each warp) beside the persistent ones; gpud/host_b.gz,
#   the same tree with no-fence.patch (the TMA rungs' consumers no longer fence the proxies after
#   each slot's barrier: TMA's copies land in the async proxy the wgmmas read), timed against
#   host_now; both bf16 families' GPU suite and compute-sanitizer on the clustered rungs again;
#   Nsight Compute's warp states of both.
# Bundles: `cargo build --release -p host`, stripped and gzipped to gpud/host_now.gz;
# `cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t`;
# gpud/bt (the wheel) and gpud/host_a.gz as run h built them.
set -u
part=${1:-1}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
# (Its own loop variable: part 1 as called used `side`, left at `a`, so its steps 3 and 4 ran
# host_a, run h's build, which has no clustered rungs.)
for build in now a b; do [ -f gpud/host_$build.gz ] && { [ -x $x/host_$build ] || { gunzip -c gpud/host_$build.gz > $x/host_$build && chmod +x $x/host_$build; }; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
timed() { # family m n k variant...
  local f=$1 m=$2 n=$3 k=$4 v; shift 4
  for v in "$@"; do
    timeout 60 $x/host_${side:-now} --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | sed "s/^/$f /"
  done
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
if [ "$part" = 2 ]; then
  step timings
  for shape in "512 4096 4096" "8192 8192 8192" "2048 4096 4096" "512 4096 11008"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    timed matmul-bf16-rounded $1 $2 $3 persistent clustered persistent_128x128 clustered_128x128
    [ -x $x/host_b ] && (for side in b now b; do timed matmul-bf16-rounded $1 $2 $3 persistent persistent_128x128 | sed "s/^/$side /"; done)
  done
  step suite
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  TEST_FAMILIES=matmul_bf16,matmul_bf16_rounded timeout 150 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $?"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --kernel-name kns=clustered --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant clustered_128x128 --m 33 --n 515 --k 2051 >> $OUT/sanitizer.txt 2>&1
    echo "$tool rc $?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  step ncu
  for v in clustered persistent; do
    timeout 120 ncu --clock-control none --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:matmul_bf16_rounded_$v$ $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --m 2048 --n 4096 --k 4096 --variant $v > $OUT/ncu-$v.txt 2>&1
    grep -E "Duration|Throughput|Stall|Warp Cycles Per Issued|Mem Busy|Max Bandwidth|L2 Hit|Mem Pipes" $OUT/ncu-$v.txt | head -30
  done
  step end
  exit 0
fi
step 1
[ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=matmul_bf16,matmul_bf16_rounded timeout 150 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked|clustered" $OUT/tests-gpu.log | head -20
step 2
san() { # tool family m n k
  timeout 60 compute-sanitizer --tool $1 --kernel-name kns=clustered --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
  echo "$1 $2 $3 $4x$5x$6 rc $?"
}
for tool in memcheck racecheck synccheck; do
  san $tool matmul-bf16-rounded clustered_128x128 33 515 2051
  san $tool matmul-bf16 clustered 300 1000 700
done
san memcheck matmul-bf16-rounded clustered 2100 4100 1000
san memcheck matmul-bf16 clustered_128x128 129 520 5000
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
step 3
for shape in "512 4096 4096" "8192 8192 8192" "512 4096 11008" "512 12288 4096" "2048 4096 4096" "4096 4096 4096" "512 4096 14336" "12608 768 3072" "1024 2304 768" "12608 4096 1024" "128 4096 4096"; do
  set -- $shape; echo "-- m=$1 n=$2 k=$3"
  timed matmul-bf16-rounded $1 $2 $3 persistent persistent_128x128 clustered clustered_128x128
done
for shape in "512 4096 4096" "8192 8192 8192"; do
  set -- $shape; echo "-- f32 C m=$1 n=$2 k=$3"
  timed matmul-bf16 $1 $2 $3 persistent persistent_128x128 clustered clustered_128x128
done
step 4
for v in long cube; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks-$v.csv &
  smi=$!
  if [ $v = long ]; then timed matmul-bf16-rounded 8192 8192 28672 auto clustered; else timed matmul-bf16-rounded 8192 8192 8192 auto; fi
  kill $smi
  echo "$v: SM MHz min/median/max | median W:"; awk -F', ' '{print $2+0, $3+0}' $OUT/clocks-$v.csv | sort -n | awk '{c[NR]=$1; p[NR]=$2} END {print c[1], c[int(NR/2)+1], c[NR], "|", p[int(NR/2)+1]}'
done
step 5
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
PYTHONPATH=/tmp/site:gpud/bt/python timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 python3 docs/runs/2026-12-06-h/racecheck.py > $OUT/racecheck-swapped.txt 2>&1
echo "racecheck (swapped, extension) rc $?"; grep -E "max relative|SUMMARY|Error" $OUT/racecheck-swapped.txt | head
for shape in "16 4096 4096" "16 12288 4096" "4 4096 4096"; do
  set -- $shape; echo "-- m=$1 n=$2 k=$3 (now, then a: MIN_RUN 384, fixed 128)"
  for side in now a; do timed matmul-bf16-rounded $1 $2 $3 swapped | sed "s/^/$side /"; done
done
echo "-- 32-64 rows: the swapped rung in row groups beside auto"
for shape in "32 4096 4096" "64 4096 4096"; do set -- $shape; side=now timed matmul-bf16-rounded $1 $2 $3 swapped auto; done
step end
