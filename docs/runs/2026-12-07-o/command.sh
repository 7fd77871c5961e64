#!/usr/bin/env bash
# Run 2026-12-07 o: issue 42, perf log change 166 (the block-scaled tiles read each step's factors
# two steps ahead, not one). carry ["gpud"]: gpud/host_d.gz (23f057b, one step ahead) and
# gpud/host_f.gz (two). Steps: 1: the block-scaled and promoted families checked at edge shapes
# (f); 2: their tiles alternated d, f three times at three shapes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/o.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in d f; do gunzip -c gpud/host_$h.gz > $x/host_$h && chmod +x $x/host_$h; done
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
for f in matmul-fp8-blockwise matmul-fp8-rowwise-promoted; do
  for shape in "1 1 1" "31 33 17" "129 255 9" "17 65 131" "33 515 2051" "130 1030 1100" "2100 4100 1000"; do
    set -- $shape
    timeout 60 $x/host_f --backend gpu --warmup 0 --runs 1 $f --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
done > $OUT/checks.txt 2>&1
grep -v " pass" $OUT/checks.txt; echo "checks: $(grep -c ' pass' $OUT/checks.txt) pass of $(wc -l < $OUT/checks.txt) lines"
step 2
for shape in "8192 8192 8192" "4096 4096 4096" "2048 11008 4096"; do
  set -- $shape
  for h in d f d f d f; do
    timed $h matmul-fp8-blockwise $1 $2 $3 persistent_128x128
  done
  for h in d f; do timed $h matmul-fp8-blockwise $1 $2 $3 persistent_128x64; timed $h matmul-fp8-rowwise-promoted $1 $2 $3 128x128; done
done
step end
