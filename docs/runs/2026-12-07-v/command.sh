#!/usr/bin/env bash
# Run 2026-12-07 v: change 173 (the forward saves each row's lse; the backward's first launch then
# only Δ and the zeroed sums: attention_backward_delta) and change 174 (the wgmma backward launch
# hands dQ to the copy engine), in one call (the device was scarce: the GPU suite and the special
# values, whose bundle does not fit beside the rest, wait for a later call).
# carry ["gpud"]:
#   gpud/host.gz       change 173's host (branch lse-173);
#   gpud/host174.gz    change 174's (branch wip-dq-bulk-174, on 173);
#   gpud/bt            change 173's wheel (`cargo xtask gpu-bundle --for torch --out gpud/bt`).
# Steps, most important first: the wheel's attention tests in the background while both hosts
# compile their PTX; the forward's rungs (lse checked) and the new launches at edge shapes; the
# passes timed, 173 and 174 alternating; the backward against SDPA's through autograd; sanitizers;
# Nsight Compute's time of each launch of 174's pass, then what its wgmma launch's warps stall on.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/v.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in host host174; do [ -x $x/$h ] || { gunzip -c gpud/$h.gz > $x/$h && chmod +x $x/$h; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
c() { # binary family heads seq dim [warmup runs] [variant]
  timeout ${T:-60} $x/$1 --backend gpu --warmup ${6:-0} --runs ${7:-1} $2 --heads $3 --seq $4 --dim $5 ${8:+--variant $8} 2>&1 | rows | awk -F'|' -v h=$1 '{print h, $3, $4, $5, $6, $8}'
}
site=/tmp/site; mkdir -p $site
( python3 -m pip install --quiet --no-deps --no-index --target $site gpud/bt/python/*.whl > $OUT/pip.log 2>&1
  PYTHONPATH=$site timeout 240 python3 -m unittest discover -v -s gpud/bt/python/tests -k attention > $OUT/torch-tests.log 2>&1
  echo "torch tests rc $?" >> $OUT/torch-tests.log ) &
torch=$!
s=$(date +%s)
T=200 c host attention-backward-delta 1 64 64 > $OUT/first-173.txt & a=$!
T=200 c host174 attention-backward-wgmma 1 64 64 > $OUT/first-174.txt & b=$!
wait $a $b; cat $OUT/first-173.txt $OUT/first-174.txt; echo "first calls $(( $(date +%s) - s )) s"
step checks
for sz in "1 1 64" "3 33 64" "1 131 128" "3 1000 64"; do c host attention $sz; c host attention-causal $sz; done
c host attention-any-dim 2 33 40; c host attention-any-dim-causal 1 65 96
for sz in "1 1 64" "2 31 128" "3 33 64" "1 131 128" "3 1000 128" "2 1031 64" "2 33 40"; do c host attention-backward-delta $sz; done
for sz in "2 33 64" "1 131 128" "2 65 96"; do c host attention-backward-query-saved $sz; c host attention-backward-query-saved-causal $sz; done
for sz in "1 1 64" "2 31 128" "3 33 64" "1 131 128" "3 1000 128" "2 1031 64"; do
  c host174 attention-backward-wgmma $sz; c host174 attention-backward-wgmma-causal $sz; c host174 attention-backward-delta $sz
done
step torch-tests
wait $torch; grep -iE "^test|^Ran|^OK|FAIL|Error|rc " $OUT/torch-tests.log | head -30
step timings
for i in 1 2; do for h in host host174; do c $h attention-backward-delta 128 4096 128 3 10; done; done
c host attention-backward-wgmma 128 4096 128 3 10
for h in host host174; do c $h attention-backward-wgmma-causal 128 4096 128 3 10; done
for h in host host174; do c $h attention-backward-delta 256 2048 64 3 10; done
c host attention-backward 32 2048 96 3 10; c host attention-backward-query-saved 32 2048 96 3 10
step backward.py
PYTHONPATH=$site timeout 150 python3 docs/runs/2026-12-07-v/backward.py 2>&1 | tail -16
step sanitizers
for tool in memcheck racecheck; do
  for fs in "host174 attention-backward-wgmma 2 257 128" "host174 attention-backward-wgmma-causal 3 131 64" "host attention-backward-delta 2 257 128" "host attention 2 257 128"; do
    set -- $fs
    timeout 60 compute-sanitizer --tool $tool $x/$1 --backend gpu --warmup 0 --runs 1 $2 --heads $3 --seq $4 --dim $5 > $OUT/san-$tool-$1-$2-$4.txt 2>&1
    echo "$tool $1 $2 $4 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1-$2-$4.txt | head -1)"
  done
done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:attention_backward \
  $x/host174 --backend gpu --warmup 0 --runs 1 attention-backward-delta --heads 128 --seq 4096 --dim 128 > $OUT/ncu.txt 2>&1
echo "ncu rc $?"; grep -E "^  attention_[a-z_]+|Duration" $OUT/ncu.txt | head -12
step stalls
timeout 60 ncu --clock-control none --section WarpStateStats --section SchedulerStats -k regex:attention_backward_wgmma \
  $x/host174 --backend gpu --warmup 0 --runs 1 attention-backward-delta --heads 128 --seq 4096 --dim 128 > $OUT/ncu-stalls.txt 2>&1
echo "ncu stalls rc $?"; grep -E "Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps" $OUT/ncu-stalls.txt | head -16
step end
