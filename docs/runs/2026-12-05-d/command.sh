#!/usr/bin/env bash
# Run 2026-12-05 d: issue 40's figures on the H200 (the first H200 run since stops 55-59) and
# whether attention_decode at long KV caches stopped on the kernel or on the host's check (run
# 2026-12-05 c). Parts, one call each (`bash command.sh a`, then b, then c), carry ["gpud"]:
#   a: the CUDA C twins built; attention_decode at 4096 and 32768 keys and its GPU suite; the row
#      reductions over few rows (change 132), the norms and their fused backward, the fused
#      cross-entropy, each beside its twin; Nsight Compute on the fused cross-entropy;
#   b: the extension's tests; bench_torch on issue 40's operators; call_cost.py; the fused
#      cross-entropy's training pass off and on (ce_fused_toggle.py);
#   c: the size sweep (bench_sizes.py, every operator, 2^10 to 2^30).
# Bundles (on the dev machine):
#   cargo build --release -p host && strip -o /tmp/h target/release/host && gzip -c /tmp/h > gpud/host_now.gz
#   cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t
#   cargo xtask wheel && cargo xtask gpu-bundle --for torch --out gpud/bt
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
part=${1:-a}
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
here=$(cd "$(dirname "$0")" && pwd)
x=/tmp/r; mkdir -p $x
[ -x $x/host ] || { gunzip -c gpud/host_now.gz > $x/host && chmod +x $x/host; }
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
if [ "$part" = a ]; then
  gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s); gpud/t/run.sh $OUT prep > /dev/null 2>&1; echo "prep rc $? in $(( $(date +%s) - s )) s"
  for keys in 4096 32768; do
    s=$(date +%s)
    timeout 45 $x/host --backend gpu --warmup 3 --runs 20 attention-decode --kv-heads 8 --group 4 --keys $keys 2>&1 | rows
    echo "attention-decode 8x4x$keys rc ${PIPESTATUS[0]} in $(( $(date +%s) - s )) s"
  done
  s=$(date +%s)
  TEST_FAMILIES=attention_decode,attention_decode_causal timeout 150 gpud/t/tests/host-gpu-test \
    every_registered_kernel --include-ignored > $OUT/tests-decode.log 2>&1
  echo "decode suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-decode.log | head
  s=$(date +%s)
  for cmd in "row-sum --rows 4 --cols 67108864" "row-sum --rows 64 --cols 4194304" "row-sum --rows 512 --cols 524288" \
             "row-max --rows 4 --cols 67108864" "layer-norm" "rms-norm" "layer-norm-backward-fused" "rms-norm-backward-fused" \
             "cross-entropy-fused --rows 8192 --cols 50257" "cross-entropy --rows 8192 --cols 50257" \
             "cross-entropy-backward --rows 8192 --cols 50257" "vec-add"; do
    timeout 60 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 $cmd 2>&1 | rows
  done > $OUT/speed.log 2>&1
  echo "speeds in $(( $(date +%s) - s )) s"; cat $OUT/speed.log
  s=$(date +%s)
  timeout 120 ncu --kernel-name regex:cross_entropy_fused --launch-count 1 --set full -o $OUT/ce-fused \
    $x/host --backend gpu --warmup 0 --runs 1 cross-entropy-fused --rows 8192 --cols 50257 > $OUT/ncu.log 2>&1
  echo "ncu rc $? in $(( $(date +%s) - s )) s"
  timeout 60 ncu --import $OUT/ce-fused.ncu-rep --page details > $OUT/ce-fused-details.txt 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Stall" $OUT/ce-fused-details.txt | head -30
  exit 0
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
if [ "$part" = b ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_torch.py --json "$OUT/torch-ops.json" \
    --ops layer_norm,rms_norm,cross_entropy,softmax,row_sum,row_max,sum,cumsum,add,decode > "$OUT/torch-ops.log" 2>&1
  echo "bench_torch rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/torch-ops.log"
  s=$(date +%s)
  PYTHONPATH="$site" timeout 90 python3 gpud/bt/python/call_cost.py --json "$OUT/call-cost.json" > "$OUT/call-cost.log" 2>&1
  echo "call_cost rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/call-cost.log"
  s=$(date +%s)
  PYTHONPATH="$site" timeout 120 python3 docs/runs/2026-12-05-d/ce_fused_toggle.py gpud/bt/python > "$OUT/ce-toggle.log" 2>&1
  echo "ce toggle rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/ce-toggle.log"
  exit 0
fi
s=$(date +%s)
PYTHONPATH="$site:gpud/bt/python" timeout 570 python3 gpud/bt/python/bench_sizes.py --json "$OUT/torch-sizes.json" > "$OUT/sizes.log" 2>&1
echo "bench_sizes rc $? in $(( $(date +%s) - s )) s"; grep -vE "^\[" "$OUT/sizes.log"; grep -E "speed 0\.[0-8]|WRONG" "$OUT/sizes.log" | head -40
