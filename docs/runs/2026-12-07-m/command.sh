#!/usr/bin/env bash
# Run 2026-12-07 m: issue 42, perf log changes 163-164. carry ["gpud"]:
#   gpud/host_m.gz  the host demo from this tree: clustered 128x128 FP8 tiles in every FP8 family
#                   (change 163), FP8's own step costs in `auto` (change 164);
#   gpud/host_p.gz  run l's (the step costs bf16's);
#   gpud/bt         the wheel from this tree.
# Steps, most important first:
#   1: the clustered 128x128 FP8 tiles checked at edge shapes (the host's check column) and under
#      compute-sanitizer (memcheck, racecheck, synccheck);
#   2: each family's 128x128 tile alone and in clusters, alternated, at five shapes;
#   3: `auto` with FP8's step costs (m) against bf16's (p) where they differ;
#   4: the extension's FP8 tests (every variant) and scaled_mm.py at three shapes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/m.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in m p; do gunzip -c gpud/host_$h.gz > $x/host_$h && chmod +x $x/host_$h; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
timed() { # host family m n k variant...
  local h=$1 f=$2 m=$3 n=$4 k=$5 v; shift 5
  for v in "$@"; do
    timeout 60 $x/host_$h --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | awk -F'|' -v h=$h '{print h, $3, $4, $5, $6, $8}'
  done
}
step 1
for f in matmul-fp8 matmul-fp8-rowwise matmul-fp8-blockwise matmul-fp8-rowwise-promoted; do
  for shape in "1 1 1" "31 33 17" "129 255 9" "257 130 300" "33 515 2051" "130 1030 1100" "2100 4100 1000"; do
    set -- $shape
    timeout 60 $x/host_m --backend gpu --warmup 0 --runs 1 $f --m $1 --n $2 --k $3 --variant clustered_128x128 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
done
for tool in memcheck racecheck synccheck; do
  for f in matmul-fp8-blockwise matmul-fp8; do
    timeout 60 compute-sanitizer --tool $tool $x/host_m --backend gpu --warmup 0 --runs 1 $f --m 290 --n 515 --k 2051 --variant clustered_128x128 > $OUT/san-$tool-$f.txt 2>&1
    echo "$tool $f rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$f.txt | head -1)"
  done
done
step 2
for shape in "8192 8192 8192" "4096 4096 4096" "2048 11008 4096" "512 4096 11008" "128 4096 4096"; do
  set -- $shape
  for rep in 1 2; do
    timed m matmul-fp8-blockwise $1 $2 $3 persistent_128x128 clustered_128x128
    timed m matmul-fp8-rowwise-promoted $1 $2 $3 128x128 clustered_128x128
    timed m matmul-fp8 $1 $2 $3 persistent_128x128 clustered_128x128
  done
  timed m matmul-fp8-rowwise $1 $2 $3 persistent_128x128 clustered_128x128 persistent
  timed m matmul-fp8 $1 $2 $3 clustered
done
step 3
for shape in "128 4096 4096" "128 4096 11008" "256 4096 4096" "64 4096 4096" "384 4096 14336"; do
  set -- $shape
  for h in p m p m; do timed $h matmul-fp8 $1 $2 $3 auto; done
done
step 4
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
(cd host/python/tests && PYTHONPATH=/tmp/site timeout 150 python3 -m unittest -k fp8 test_torch 2>&1 | tail -5)
PYTHONPATH=/tmp/site timeout 120 python3 docs/runs/2026-12-07-k/scaled_mm.py 8192x8192x8192 2048x11008x4096 128x4096x4096
step end
PYTHONPATH=/tmp/site timeout 60 python3 docs/runs/2026-12-07-m/variants.py 4096x4096x4096 2048x11008x4096 8192x8192x8192
timed m matmul-fp8 4096 4096 4096 auto clustered
step end2
