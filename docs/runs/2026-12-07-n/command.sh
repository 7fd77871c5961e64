#!/usr/bin/env bash
# Run 2026-12-07 n: issues 38 and 42, perf log change 165 (the TMA tiles' consumers: the step's
# descriptors from one base, the ring's slot and phase counted along). carry ["gpud"]:
#   gpud/host_m.gz  run m's host demo (the consumers as in 4cf6446);
#   gpud/host_d.gz  the host demo with change 165.
# Steps: 1: every bf16 and FP8 TMA tile checked at edge shapes (d); 2: the tiles alternated
# m, d, m, d at three shapes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/n.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in m d; do gunzip -c gpud/host_$h.gz > $x/host_$h && chmod +x $x/host_$h; done
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
for f in matmul-bf16 matmul-bf16-rounded matmul-fp8 matmul-fp8-rowwise matmul-fp8-blockwise matmul-fp8-rowwise-promoted; do
  for shape in "1 1 1" "31 33 17" "129 255 9" "33 515 2051" "2100 4100 1000"; do
    set -- $shape
    timeout 60 $x/host_d --backend gpu --warmup 0 --runs 1 $f --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
done > $OUT/checks.txt 2>&1
grep -v " pass" $OUT/checks.txt; echo "checks: $(grep -c ' pass' $OUT/checks.txt) pass of $(wc -l < $OUT/checks.txt) lines"
step 2
for shape in "8192 8192 8192" "2048 11008 4096" "512 4096 11008"; do
  set -- $shape
  for h in m d m d; do
    timed $h matmul-fp8 $1 $2 $3 persistent_128x128 clustered
    timed $h matmul-fp8-blockwise $1 $2 $3 persistent_128x128
    timed $h matmul-bf16-rounded $1 $2 $3 persistent_128x128 persistent
  done
done
step end
