#!/usr/bin/env bash
# Run 2026-12-07 s: attention's backward pass on wgmma (perf log 170, issue 39). carry ["gpud"]:
# gpud/host.gz, gpud/t (GPU tests), gpud/bt (the wheel), all from this tree.
# `command.sh 1`: the driver's first compilation once; the wgmma pass (statistics, wgmma, finish)
#   checked against f64 at edge and large shapes, every key and causal, and the statistics' and
#   finish's families; three compute-sanitizer tools on it; timed beside mma.sync's two launches at
#   the bench shapes; PyTorch's SDPA backward at the same shapes (sdpa_backward.py).
# `command.sh all`: both parts in one call. `command.sh 2`: every family's special values on the GPU (the attention backward's grouped heads
#   take the wgmma pass at dims 64 and 128), the GPU suite of the attention backward families, the
#   extension's attention tests (autograd through the pass).
set -u
part=${1:-1}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
[ -x $x/host ] || { gunzip -c gpud/host.gz > $x/host && chmod +x $x/host; }
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
c() { # family heads seq dim [warmup runs]
  timeout ${T:-60} $x/host --backend gpu --warmup ${5:-0} --runs ${6:-1} $1 --heads $2 --seq $3 --dim $4 2>&1 | rows | awk -F'|' '{print $3, $4, $5, $6, $8}'
}
if [ "$part" != 2 ]; then
  s=$(date +%s); T=200 c attention-backward-wgmma 1 64 64; echo "first call $(( $(date +%s) - s )) s"
  step checks
  for f in attention-backward-wgmma attention-backward-wgmma-causal; do
    for sz in "1 1 64" "1 1 128" "2 2 128" "2 31 128" "3 33 64" "1 63 128" "1 65 128" "2 129 64" "1 131 128" "2 257 128" "8 1024 128" "4 2049 64" "3 1000 128"; do
      [ -n "${SHORT:-}" ] && case "$sz" in "1 1 128"|"2 2 128"|"1 63 128"|"2 129 64"|"8 1024 128") continue ;; esac
      c $f $sz
    done
  done
  for f in attention-backward-statistics attention-backward-statistics-causal attention-backward-finish; do
    for sz in "2 33 64" "1 130 128" "2 33 40"; do c $f $sz; done
  done
  step sanitizers
  for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    for fs in "attention-backward-wgmma 2 257 128" "attention-backward-wgmma-causal 3 131 64"; do
      set -- $fs
      timeout 90 compute-sanitizer --tool $tool $x/host --backend gpu --warmup 0 --runs 1 $1 --heads $2 --seq $3 --dim $4 > $OUT/san-$tool-$1.txt 2>&1
      echo "$tool $1 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1.txt | head -1)"
    done
  done
  step timings
  for f in attention-backward-wgmma attention-backward attention-backward-wgmma-causal attention-backward-causal; do
    c $f 128 4096 128 3 10
  done
  for f in attention-backward-wgmma attention-backward; do c $f 256 2048 64 3 10; done
  step sdpa
  timeout 120 python3 docs/runs/2026-12-07-s/sdpa_backward.py 2>&1 | tail -10
fi
if [ "$part" != 1 ]; then
  [ "$part" = 2 ] && { s=$(date +%s); T=200 c attention-backward-wgmma 1 64 64; echo "first call $(( $(date +%s) - s )) s"; }
  bash gpud/t/run.sh $OUT/unpacked unpack || exit 2
  s=$(date +%s)
  timeout 150 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked|failures" $OUT/special.log | head -20
  [ -n "${SHORT:-}" ] || {
  s=$(date +%s)
  TEST_FAMILIES=attention_backward_statistics,attention_backward_statistics_causal,attention_backward_wgmma,attention_backward_wgmma_causal,attention_backward_finish \
    timeout 200 gpud/t/tests/host-gpu-test --include-ignored every_registered > $OUT/suite.log 2>&1
  echo "suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/suite.log | head; grep -B2 -A12 "failures:" $OUT/suite.log | head -40
  }
  python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
  s=$(date +%s)
  (cd host/python/tests && PYTHONPATH=/tmp/site timeout ${PY_S:-200} python3 -m unittest -k attention test_torch 2>&1 | tail -8)
  echo "extension attention tests in $(( $(date +%s) - s )) s"
fi
step end
