#!/usr/bin/env bash
# Run 2026-12-07 q. carry ["gpud"]:
#   gpud/host_d.gz  the host demo at 23f057b (HEAD's kernels: every consumer thread releases a slot);
#   gpud/host_e.gz  this tree: one arrival a consumer warp (perf log 167), and each FP8 family's
#                   swapped-role rung for A of few rows (168); f32 totals on 128x256 tiles, the
#                   promoted family's (169); consumers 232 registers, the producer 40;
#   gpud/bt         the wheel from this tree (python.sh).
# Steps, most important first:
#   1: e's TMA tiles and swapped rungs checked at edge shapes (the host's check column), and under
#      compute-sanitizer (memcheck, racecheck, synccheck);
#   2: the swapped rungs against the tiles `auto` takes at decoding's shapes; d and e alternated on
#      the TMA tiles at three shapes;
# python.sh, a call of its own: the extension's FP8 tests (every variant, the swapped ones too);
# run p's two suites, the model shapes in FP8 against torch._scaled_mm (fp8_models.py) and in
# bf16 against PyTorch (bench_models.py), this tree's wheel.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/q.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in d e; do gunzip -c gpud/host_$h.gz > $x/host_$h && chmod +x $x/host_$h; done
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
check() { # family variant shapes...
  local f=$1 v=$2 shape; shift 2
  for shape in "$@"; do
    set -- $shape
    timeout 30 $x/host_e --backend gpu --warmup 0 --runs 1 $f --m $1 --n $2 --k $3 --variant $v 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
}
step 1
few="1 1 1|2 33 17|16 4096 4096|31 1000 333|32 130 2051|17 515 131|1 28672 4096|33 300 500|129 255 9|7 1027 1100"
tiles="1 1 1|31 33 17|129 255 9|33 515 2051|2100 4100 1000"
{
  IFS='|' read -ra F <<< "$few"; IFS='|' read -ra T <<< "$tiles"
  for f in matmul-fp8 matmul-fp8-rowwise matmul-fp8-blockwise matmul-fp8-rowwise-promoted matmul-bf16 matmul-bf16-rounded; do
    check $f swapped "${F[@]}"
    check $f persistent_128x128 "${T[@]}"
    check $f persistent_128x64 "${T[@]}"
  done
  for f in matmul-fp8 matmul-fp8-rowwise matmul-fp8-rowwise-promoted matmul-bf16 matmul-bf16-rounded; do check $f persistent "${T[@]}"; done
  for f in matmul-fp8 matmul-bf16-rounded; do check $f clustered "${T[@]}"; done
} > $OUT/checks.txt 2>&1
echo "checks: $(wc -l < $OUT/checks.txt) rows, $(grep -c ' ok' $OUT/checks.txt) ok; the others:"; grep -v " ok" $OUT/checks.txt | head -20
for tool in memcheck racecheck synccheck; do
  for fv in "matmul-fp8-blockwise persistent_128x128 290 515 2051" "matmul-fp8 persistent 290 515 2051" "matmul-fp8-rowwise-promoted persistent 290 515 2051" "matmul-fp8-blockwise swapped 17 515 2051" "matmul-fp8 swapped 31 300 4100"; do
    set -- $fv
    timeout 60 compute-sanitizer --tool $tool $x/host_e --backend gpu --warmup 0 --runs 1 $1 --m $3 --n $4 --k $5 --variant $2 > $OUT/san-$tool-$1-$2.txt 2>&1
    echo "$tool $1 $2 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1-$2.txt | head -1)"
  done
done
step 2
for shape in "1 4096 4096" "16 4096 4096" "32 4096 4096" "16 28672 4096" "16 4096 14336" "1 128256 4096"; do
  set -- $shape
  timed e matmul-fp8 $1 $2 $3 swapped persistent_128x64 persistent_128x128
  timed e matmul-fp8-blockwise $1 $2 $3 swapped persistent_128x64
  timed e matmul-fp8-rowwise-promoted $1 $2 $3 swapped persistent_128x64
done
for h in d e d e; do timed $h matmul-bf16-rounded 16 4096 4096 swapped; done
for shape in "8192 8192 8192" "4096 4096 4096" "512 4096 11008"; do
  set -- $shape
  for h in d e d e; do
    timed $h matmul-fp8 $1 $2 $3 persistent persistent_128x128
    timed $h matmul-fp8-blockwise $1 $2 $3 persistent_128x128
    timed $h matmul-fp8-rowwise-promoted $1 $2 $3 persistent persistent_128x128
    timed $h matmul-bf16-rounded $1 $2 $3 persistent_128x128
  done
done
step end
