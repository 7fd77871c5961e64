#!/usr/bin/env bash
# Run 2026-12-07 u (run on an H100, 19:32 UTC; summary.md): change 172 (the wgmma backward launch's loop: the next tile copied while the
# tile's first products run, two barriers a tile instead of three, no mask arithmetic on tiles
# inside the sequence and below the diagonal, the softmax's waits naming their accumulators).
# carry ["gpud"]:
#   gpud/host_main.gz  the host demo at main 71c66c2 (change 171);
#   gpud/host.gz       the change's;
#   gpud/t             the change's GPU tests (`cargo xtask gpu-bundle --for tests --tests
#                      host-gpu-test,host-special_values-test --out gpud/t`).
# Steps, most important first: the first compilation; the pass checked at edge and large shapes;
# main and the change alternated at three shapes; SDPA's backward in the same call; three
# sanitizers; the backward families' GPU suite; special values; Nsight Compute's time of each launch.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/u.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in host host_main; do [ -x $x/$h ] || { gunzip -c gpud/$h.gz > $x/$h && chmod +x $x/$h; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
c() { # binary family heads seq dim [warmup runs]
  timeout ${T:-60} $x/$1 --backend gpu --warmup ${6:-0} --runs ${7:-1} $2 --heads $3 --seq $4 --dim $5 2>&1 | rows | awk -F'|' -v h=$1 '{print h, $3, $4, $5, $6, $8}'
}
s=$(date +%s); T=200 c host attention-backward-wgmma 1 64 64; echo "first call $(( $(date +%s) - s )) s"
step checks
for f in attention-backward-wgmma attention-backward-wgmma-causal; do
  for sz in "1 1 64" "1 2 128" "3 33 64" "1 63 64" "1 131 128" "2 257 128" "3 1000 128" "2 1031 64"; do c host $f $sz; done
done
step timings
for h in host_main host host_main host; do c $h attention-backward-wgmma 128 4096 128 3 10; done
for h in host_main host; do c $h attention-backward-wgmma 256 2048 64 3 10; done
for h in host_main host; do c $h attention-backward-wgmma-causal 128 4096 128 3 10; done
step sdpa
timeout 120 python3 docs/runs/2026-12-07-s/sdpa_backward.py 2>&1 | tail -10
step sanitizers
for tool in memcheck racecheck synccheck; do
  for fs in "attention-backward-wgmma 2 257 128" "attention-backward-wgmma-causal 3 131 64"; do
    set -- $fs
    timeout 90 compute-sanitizer --tool $tool $x/host --backend gpu --warmup 0 --runs 1 $1 --heads $2 --seq $3 --dim $4 > $OUT/san-$tool-$1-$3.txt 2>&1
    echo "$tool $1 $3 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$1-$3.txt | head -1)"
  done
done
step suite
bash gpud/t/run.sh $OUT/unpacked unpack || exit 2
TEST_FAMILIES=attention_backward,attention_backward_keys,attention_backward_statistics,attention_backward_statistics_causal,attention_backward_statistics_wgmma,attention_backward_statistics_wgmma_causal,attention_backward_wgmma,attention_backward_wgmma_causal,attention_backward_finish \
  timeout 200 gpud/t/tests/host-gpu-test --include-ignored every_registered > $OUT/suite.log 2>&1
echo "suite rc $?"; grep -E "test result|FAILED|panicked" $OUT/suite.log | head
timeout 120 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/special.log 2>&1
echo "special values rc $?"; grep -E "test result|FAILED|panicked" $OUT/special.log | head
step ncu
timeout 150 ncu --clock-control none --section SpeedOfLight -k regex:attention_backward \
  $x/host --backend gpu --warmup 0 --runs 1 attention-backward-wgmma --heads 128 --seq 4096 --dim 128 > $OUT/ncu.txt 2>&1
echo "ncu rc $?"; grep -E "^  attention_backward_[a-z_]+|Duration|Compute \(SM\) Throughput" $OUT/ncu.txt | head -12
step end
