#!/usr/bin/env bash
# Run 2026-12-07 t (H200, 17:06-17:11 UTC; output.txt, summary.md): the backward
# pass's first launch on wgmma (attention_backward_statistics_wgmma: lse from the forward's first
# product and online softmax, Δ, the sums zeroed), and where the pass's time goes. carry ["gpud"]:
#   gpud/host_main.gz  the host demo at main (the statistics launch on mma.sync);
#   gpud/host.gz       this branch's;
#   gpud/t             this branch's GPU tests (`cargo xtask gpu-bundle --for tests --tests
#                      host-gpu-test,host-special_values-test --out gpud/t`).
# Also the forward's rung 1 (`attention_wgmma`), whose next tile is now copied after the barrier.
# Steps, most important first: the first compilation; the new families and the pass checked at
# edge and large shapes; three sanitizers on the new launch; main and the branch alternated at
# three shapes; Nsight Compute's time of each launch and the wgmma launch's warp states; the GPU
# suite of every attention backward family; special values on the GPU.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/t.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in host host_main; do [ -x $x/$h ] || { gunzip -c gpud/$h.gz > $x/$h && chmod +x $x/$h; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
c() { # binary family heads seq dim [warmup runs]
  timeout ${T:-60} $x/$1 --backend gpu --warmup ${6:-0} --runs ${7:-1} $2 --heads $3 --seq $4 --dim $5 2>&1 | rows | awk -F'|' -v h=$1 '{print h, $3, $4, $5, $6, $8}'
}
s=$(date +%s); T=200 c host attention-backward-statistics-wgmma 1 64 64; echo "first call $(( $(date +%s) - s )) s"
step checks
for f in attention-backward-statistics-wgmma attention-backward-statistics-wgmma-causal attention-backward-wgmma attention-backward-wgmma-causal; do
  for sz in "1 1 64" "2 31 128" "3 33 64" "1 65 128" "1 131 128" "2 257 128" "4 2049 64" "3 1000 128"; do c host $f $sz; done
done
for f in attention-backward-statistics attention-backward-finish; do c host $f 2 33 64; c host $f 2 33 40; done
# The forward's rung 1 (attention_wgmma) with its next tile copied after the barrier (a race fixed).
for f in attention attention-causal; do
  for sz in "2 257 128" "3 1000 64" "1 129 128"; do
    set -- $sz
    timeout 60 $x/host --backend gpu --warmup 0 --runs 1 $f --heads $1 --seq $2 --dim $3 --variant wgmma 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
done
step sanitizers
for tool in memcheck racecheck synccheck; do
  for fs in "attention-backward-statistics-wgmma 2 257 128" "attention-backward-statistics-wgmma-causal 3 131 64" "attention-backward-wgmma 2 257 64"; do
    set -- $fs
    timeout 90 compute-sanitizer --tool $tool $x/host --backend gpu --warmup 0 --runs 1 $1 --heads $2 --seq $3 --dim $4 > $OUT/san-$tool-$1.txt 2>&1
    echo "$tool $1 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1.txt | head -1)"
  done
done
step timings
for sz in "128 4096 128" "256 2048 64"; do
  for h in host_main host host_main host; do c $h attention-backward-wgmma $sz 3 10; done
done
for h in host_main host; do c $h attention-backward-wgmma-causal 128 4096 128 3 10; done
step ncu
timeout 200 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy -k regex:attention_backward \
  $x/host --backend gpu --warmup 0 --runs 1 attention-backward-wgmma --heads 128 --seq 4096 --dim 128 > $OUT/ncu.txt 2>&1
echo "ncu rc $?"; grep -E "attention_backward_[a-z_]+|Duration|Compute \(SM\) Throughput|Memory Throughput|Stall" $OUT/ncu.txt | head -40
step suite
bash gpud/t/run.sh $OUT/unpacked unpack || exit 2
TEST_FAMILIES=attention_backward,attention_backward_keys,attention_backward_statistics,attention_backward_statistics_causal,attention_backward_statistics_wgmma,attention_backward_statistics_wgmma_causal,attention_backward_wgmma,attention_backward_wgmma_causal,attention_backward_finish \
  timeout 200 gpud/t/tests/host-gpu-test --include-ignored every_registered > $OUT/suite.log 2>&1
echo "suite rc $?"; grep -E "test result|FAILED|panicked" $OUT/suite.log | head
timeout 120 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/special.log 2>&1
echo "special values rc $?"; grep -E "test result|FAILED|panicked" $OUT/special.log | head
step end
