#!/usr/bin/env bash
# Run 2026-12-07 l: issue 42, perf log changes 160-162. carry ["gpud"]:
#   gpud/host_now.gz  the host demo built from 101119e (run k's tree);
#   gpud/host_q.gz    the host demo with the block-scaled tiles reading each step's factors a
#                     step ahead (change 160) and FP8's own cluster rule in `auto` (change 161);
#   gpud/host_p.gz    q without the TMA tiles' per-step proxy fence (its MEMBAR.ALL.CTA waits
#                     for the loads in flight: the factors read ahead);
#   gpud/host_c.gz    101119e with docs/runs/2026-12-07-j/warp-arrivals.patch (run j part 4);
#   gpud/bt           the wheel from this tree (`cargo xtask gpu-bundle --for torch --out gpud/bt`):
#                     per-tensor scales without fast accumulation on the promoted row-wise tiles
#                     (change 162).
# Steps, most important first:
#   1: every FP8 kernel, and the bf16 persistent tiles whose body changed, checked at edge shapes;
#   2: the block-scaled tiles before (now), read ahead (q) and without the fence (p), alternated; the promoted and the fast
#      128x128 tiles at 8192^3 (what the promotion itself costs);
#   3: scaled_mm.py (ours through the extension against torch._scaled_mm, one process) and the
#      extension's FP8 tests; kernels_of.py (the kernels _scaled_mm launches);
#   4: the per-tensor tiles one by one and `auto` at model shapes (for the tile rules);
#   5: Nsight Compute's stall reasons for the block-scaled 128x128 tile at 4096^3;
#   6: run j's part 4, where time is left.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/l.txt") 2>&1
x=/tmp/r; mkdir -p $x
for h in now q p; do gunzip -c gpud/host_$h.gz > $x/host_$h && chmod +x $x/host_$h; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
check() { # family shapes...
  local f=$1; shift
  for shape in "$@"; do
    set -- $shape
    timeout 60 $x/host_p --backend gpu --warmup 0 --runs 1 $f --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
  done
}
timed() { # host family m n k variant...
  local h=$1 f=$2 m=$3 n=$4 k=$5 v; shift 5
  for v in "$@"; do
    timeout 60 $x/host_$h --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | awk -F'|' -v h=$h '{print h, $3, $4, $5, $6, $8}'
  done
}
step 1
edges=("1 1 1" "31 33 17" "129 255 9" "17 65 131" "33 515 2051" "130 1030 1100" "128 4096 4096" "2100 4100 1000")
check matmul-fp8-blockwise "${edges[@]}"
check matmul-fp8-rowwise-promoted "${edges[@]}"
check matmul-fp8 "1 1 1" "129 255 9" "33 515 2051" "2100 4100 1000"
check matmul-fp8-rowwise "129 255 9" "33 515 2051"
check matmul-bf16-rounded "1 1 1" "31 33 17" "33 515 2051" "2100 4100 1000"
check matmul-bf16 "31 33 17" "2100 4100 1000"
step 2
for shape in "8192 8192 8192" "4096 4096 4096" "2048 11008 4096"; do
  set -- $shape
  for h in now q p now q p; do timed $h matmul-fp8-blockwise $1 $2 $3 persistent_128x128 persistent_128x64; done
done
timed p matmul-fp8-rowwise-promoted 8192 8192 8192 128x128 128x64
for h in now p; do timed $h matmul-fp8 8192 8192 8192 persistent_128x128 persistent clustered; done
step 3
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
PYTHONPATH=/tmp/site timeout 200 python3 docs/runs/2026-12-07-k/scaled_mm.py 8192x8192x8192 4096x4096x4096 2048x11008x4096 12608x4096x1024 128x4096x4096 512x4096x11008
(cd host/python/tests && PYTHONPATH=/tmp/site timeout 120 python3 -m unittest -k fp8 test_torch 2>&1 | tail -5)
timeout 60 python3 docs/runs/2026-12-07-l/kernels_of.py 8192x8192x8192 4096x4096x4096 128x4096x4096 2048x11008x4096
step 4
for shape in "128 4096 4096" "128 11008 4096" "128 4096 11008" "512 4096 4096" "512 4096 11008" "512 11008 4096" \
             "1024 4096 4096" "2048 4096 4096" "2048 4096 11008" "4096 11008 4096" "4096 4096 14336" "8192 8192 2048" \
             "12608 4096 1024" "16384 4096 4096" "4096 28672 8192"; do
  set -- $shape
  timed p matmul-fp8 $1 $2 $3 persistent_128x64 persistent_128x128 persistent clustered auto
done
step 5
timeout 120 ncu --clock-control none --section WarpStateStats --section SourceCounters --print-details all --metrics regex:smsp__pcsamp_warps_issue_stalled_[a-z_]+$ -k regex:"matmul_fp8_blockwise_persistent_128x128" $x/host_p --backend gpu --warmup 0 --runs 1 matmul-fp8-blockwise --m 4096 --n 4096 --k 4096 --variant persistent_128x128 > $OUT/ncu-blockwise.txt 2>&1
echo "-- ncu blockwise rc $?"
grep -E "^  [a-zA-Z_0-9]+.*\(|smsp__pcsamp_warps_issue_stalled|Warp Cycles Per Issued" $OUT/ncu-blockwise.txt | awk '$NF+0 > 0 || /\(/' | head -50
step 6
bash docs/runs/2026-12-07-j/command.sh 4
step end
