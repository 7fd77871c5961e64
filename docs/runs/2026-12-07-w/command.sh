#!/usr/bin/env bash
# Run 2026-12-07 w: change 174b (the wgmma backward launch's dSᵀ stored by stmatrix and its dQ
# product's descriptors made in the loop, dQ still added by red.global) against change 173, its
# base, in one call.
# carry ["gpud"]:
#   gpud/host.gz       change 173's host (branch lse-173);
#   gpud/host174b.gz   change 174b's (branch wip-174b, on 173).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/w.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in host host174b; do [ -x $x/$h ] || { gunzip -c gpud/$h.gz > $x/$h && chmod +x $x/$h; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
c() { # binary family heads seq dim [warmup runs]
  timeout ${T:-60} $x/$1 --backend gpu --warmup ${6:-0} --runs ${7:-1} $2 --heads $3 --seq $4 --dim $5 2>&1 | rows | awk -F'|' -v h=$1 '{print h, $3, $4, $5, $6, $8}'
}
T=200 c host attention-backward-delta 1 64 64 > $OUT/first-173.txt & a=$!
T=200 c host174b attention-backward-wgmma 1 64 64 > $OUT/first-174b.txt & b=$!
wait $a $b; cat $OUT/first-173.txt $OUT/first-174b.txt
step checks
for sz in "1 1 64" "2 31 128" "3 33 64" "1 131 128" "3 1000 128" "2 1031 64"; do
  c host174b attention-backward-wgmma $sz; c host174b attention-backward-wgmma-causal $sz; c host174b attention-backward-delta $sz
done
step timings
for i in 1 2; do for h in host host174b; do c $h attention-backward-delta 128 4096 128 3 10; done; done
for h in host host174b; do c $h attention-backward-wgmma-causal 128 4096 128 3 10; done
for h in host host174b; do c $h attention-backward-delta 256 2048 64 3 10; done
step sanitizers
for tool in memcheck racecheck; do
  for fs in "attention-backward-wgmma 2 257 128" "attention-backward-wgmma-causal 3 131 64"; do
    set -- $fs
    timeout 60 compute-sanitizer --tool $tool $x/host174b --backend gpu --warmup 0 --runs 1 $1 --heads $2 --seq $3 --dim $4 > $OUT/san-$tool-$1-$3.txt 2>&1
    echo "$tool $1 $3 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1-$3.txt | head -1)"
  done
done
step ncu
timeout 100 ncu --clock-control none -k regex:attention_backward_wgmma -c 1 --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum \
  $x/host174b --backend gpu --warmup 0 --runs 1 attention-backward-delta --heads 128 --seq 4096 --dim 128 > $OUT/ncu-host174b.txt 2>&1
echo "ncu rc $?"; grep -E "ratio|sum|pct" $OUT/ncu-host174b.txt | awk '$NF+0 > 0.05 || /sum|pct/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
step end
