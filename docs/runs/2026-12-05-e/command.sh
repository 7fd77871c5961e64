#!/usr/bin/env bash
# Run 2026-12-05 e (an H100; prepared while no GPU was lent, run when one came at the session's
# end: parts a, cut by its ten minutes during the speeds, and c; s and b not yet run). Measures
# perf log changes 135-138 and checks
# the kernels they changed. Parts, one call each (`bash docs/runs/next/command.sh a`, then b),
# carry ["gpud"]:
#   a: the twins built; the GPU suite of the changed families; row sums at 1-16 columns, both fused
#      cross-entropy kernels (f32, bf16) and the decode pair beside their twins;
#   s: the special values on the GPU; compute-sanitizer on the pipelined cross-entropy;
#   b: the extension's tests; the training pass three ways (two passes, fused, fused pipelined)
#      against PyTorch (ce_fused_toggle.py); bench_torch's cross_entropy, row_sum and softmax cases.
# Bundles (on the dev machine):
#   rm -rf gpud; mkdir gpud
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
  s=$(date +%s)
  TEST_FAMILIES=row_sum,row_max,softmax,cross_entropy_fused,cross_entropy_fused_bf16,attention_decode,attention_decode_causal,attention_decode_combine timeout 240 \
    gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  for cmd in "row-sum --rows 89478485 --cols 3" "row-sum --rows 67108864 --cols 4" "row-max --rows 67108864 --cols 4" \
             "row-sum --rows 33554432 --cols 8" "row-sum --rows 268435456 --cols 1" \
             "cross-entropy-fused --rows 8192 --cols 50257" "cross-entropy-fused --rows 4096 --cols 128256" \
             "cross-entropy-fused-bf16 --rows 8192 --cols 50257" "cross-entropy-fused-bf16 --rows 8192 --cols 128256" \
             "attention-decode --kv-heads 8 --group 4 --keys 4096" "attention-decode --kv-heads 8 --group 4 --keys 32768" \
             "attention-decode --kv-heads 64 --group 4 --keys 32768" "attention-decode-combine --rows 32 --splits 132 --dim 128" \
             "vec-add"; do
    timeout 60 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 $cmd 2>&1 | rows
  done > $OUT/speed.log 2>&1
  echo "speeds in $(( $(date +%s) - s )) s"; cat $OUT/speed.log
  exit 0
fi
if [ "$part" = s ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  timeout 100 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/tests-special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
  s=$(date +%s)
  for tool in memcheck racecheck synccheck initcheck; do
    for variant in cross_entropy_fused_pipelined cross_entropy_fused_pipelined_bf16; do
      cmd=cross-entropy-fused; [ $variant = cross_entropy_fused_pipelined_bf16 ] && cmd=cross-entropy-fused-bf16
      timeout 55 compute-sanitizer --tool $tool --error-exitcode 9 $x/host --backend gpu --warmup 0 --runs 1 \
        $cmd --rows 300 --cols 4099 --variant $variant > $OUT/sanitizer-$tool-$variant.log 2>&1
      echo "$tool $variant rc $?"; grep -E "ERROR SUMMARY" $OUT/sanitizer-$tool-$variant.log | head -1
    done
  done
  echo "sanitizers in $(( $(date +%s) - s )) s"
  exit 0
fi
if [ "$part" = c ]; then
  # What part a's ten minutes did not reach: the decode pair, then the training pass three ways.
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  [ -d gpud/t/cuda-c ] || gpud/t/run.sh $OUT prep > /dev/null 2>&1
  for cmd in "attention-decode --kv-heads 8 --group 4 --keys 4096" "attention-decode --kv-heads 8 --group 4 --keys 32768" \
             "attention-decode --kv-heads 64 --group 4 --keys 32768" "row-sum --rows 67108864 --cols 4 --variant row_sum_warp" \
             "row-sum --rows 89478485 --cols 3 --variant row_sum_warp"; do
    timeout 60 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 $cmd 2>&1 | rows
  done
  site=/tmp/site
  [ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 $here/ce_fused_toggle.py gpud/bt/python > "$OUT/ce-toggle.log" 2>&1
  echo "ce toggle rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/ce-toggle.log"
  exit 0
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
s=$(date +%s)
PYTHONPATH="$site" timeout 150 python3 $here/ce_fused_toggle.py gpud/bt/python > "$OUT/ce-toggle.log" 2>&1
echo "ce toggle rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/ce-toggle.log"
s=$(date +%s)
PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_torch.py --json "$OUT/torch-ops.json" \
  --ops cross_entropy,row_sum,row_max,softmax,decode > "$OUT/torch-ops.log" 2>&1
echo "bench_torch rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/torch-ops.log"
