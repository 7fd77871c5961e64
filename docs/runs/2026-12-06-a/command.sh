#!/usr/bin/env bash
# Run 2026-12-06 a. Parts, one call each (`bash docs/runs/2026-12-06-a/command.sh s`), carry ["gpud"]:
#   s: what run 2026-12-05 e left: the special values on the GPU; compute-sanitizer's four tools on
#      the pipelined cross-entropy (f32, bf16); then on the TMA matmul rungs reading padded copies;
#   m: the GPU suite of the bf16 and TF32 ladders (their odd edge shapes now on the TMA path
#      through padded copies); the LM head and odd shapes against cuBLAS (perf log 139);
#   n: the TF32 and bf16 rungs for up to 16 rows beside the others at decode shapes (perf log 140);
#   mn: m then n, in one call; q: the least that tells (the suite, each change's headline shape);
#   b: the extension's tests; bench_models on lm_heads.json (the odd products against PyTorch)
#      and at 16 tokens;
#   c: the training pass three ways; bench_torch's row, cross-entropy and decode cases.
# Bundles (on the dev machine):
#   rm -rf gpud; mkdir gpud
#   cargo build --release -p host && strip -o /tmp/h target/release/host && gzip -c /tmp/h > gpud/host_now.gz
#   cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t
#   cargo xtask wheel && cargo xtask gpu-bundle --for torch --out gpud/bt
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
part=${1:-m}
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
here=$(cd "$(dirname "$0")" && pwd)
x=/tmp/r; mkdir -p $x
[ -x $x/host ] || { gunzip -c gpud/host_now.gz > $x/host && chmod +x $x/host; }
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
[ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
sanitize() { # tool log command...
  local tool=$1 log=$2; shift 2
  timeout 55 compute-sanitizer --tool $tool --error-exitcode 9 $x/host --backend gpu --warmup 0 --runs 1 "$@" > $OUT/$log 2>&1
  echo "$tool $log rc $? $(grep -E 'ERROR SUMMARY' $OUT/$log | head -1)"
}
if [ "$part" = q ]; then
  # The least that tells: the two ladders' GPU suite and each change's headline shape.
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16,matmul_tc timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  timeout 40 $x/host --backend gpu --warmup 3 --runs 20 matmul-bf16 --m 1024 --n 50257 --k 768 --variant persistent 2>&1 | rows
  timeout 40 $x/host --backend gpu --warmup 3 --runs 20 matmul-bf16 --m 128 --n 50257 --k 768 --variant persistent 2>&1 | rows
  for v in small_m16 small_m8 wgmma; do
    timeout 40 $x/host --backend gpu --warmup 3 --runs 20 matmul-tc --m 16 --n 10240 --k 8192 --variant $v 2>&1 | rows
  done
  for v in small_m16 small_m4 persistent; do
    timeout 40 $x/host --backend gpu --warmup 3 --runs 20 matmul-bf16 --m 16 --n 28672 --k 4096 --variant $v 2>&1 | rows
  done
  exit 0
fi
if [ "$part" = s ]; then
  s=$(date +%s)
  timeout 100 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/tests-special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
  s=$(date +%s)
  for tool in memcheck racecheck synccheck initcheck; do
    sanitize $tool $tool-ce-f32.log cross-entropy-fused --rows 300 --cols 4099 --variant cross_entropy_fused_pipelined
    sanitize $tool $tool-ce-bf16.log cross-entropy-fused-bf16 --rows 300 --cols 4099 --variant cross_entropy_fused_pipelined_bf16
  done
  for tool in memcheck initcheck; do
    sanitize $tool $tool-bf16-odd.log matmul-bf16 --m 129 --n 1027 --k 515 --variant matmul_bf16_persistent
    sanitize $tool $tool-tf32-odd.log matmul-tc --m 129 --n 1027 --k 515 --variant matmul_tc_wgmma
  done
  for tool in memcheck racecheck initcheck; do
    sanitize $tool $tool-tf32-m16.log matmul-tc --m 12 --n 1027 --k 2049 --variant matmul_tc_small_m16
    sanitize $tool $tool-bf16-m16.log matmul-bf16 --m 12 --n 1027 --k 2049 --variant matmul_bf16_small_m16
  done
  echo "sanitizers in $(( $(date +%s) - s )) s"
  exit 0
fi
if [ "$part" = m ] || [ "$part" = mn ]; then
  s=$(date +%s); gpud/t/run.sh $OUT prep > /dev/null 2>&1; echo "prep rc $? in $(( $(date +%s) - s )) s"
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16,matmul_tc timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for cmd in "matmul-bf16 --m 1024 --n 50257 --k 768" "matmul-bf16 --m 128 --n 50257 --k 768" "matmul-bf16 --m 4096 --n 50257 --k 768" \
             "matmul-bf16 --m 1024 --n 50264 --k 768" "matmul-bf16 --m 4097 --n 3073 --k 2049" "matmul-bf16 --m 2048 --n 4096 --k 4097" \
             "matmul-tc --m 1024 --n 50257 --k 768" "matmul-tc --m 128 --n 50257 --k 768" "matmul-tc --m 4097 --n 3073 --k 2049"; do
    v=matmul_bf16_persistent; case "$cmd" in matmul-tc*) v=matmul_tc_wgmma;; esac
    timeout 60 $x/host --backend gpu --warmup 3 --runs 20 $cmd --variant $v 2>&1 | rows
  done
  [ "$part" = mn ] || exit 0
fi
if [ "$part" = n ] || [ "$part" = mn ]; then
  [ -d gpud/t/cuda-c ] || gpud/t/run.sh $OUT prep > /dev/null 2>&1
  # The TF32 and bf16 rungs for up to 16 rows (perf log 140) beside the CUDA-core small-m rungs and
  # the wgmma ones, at decode shapes.
  for shape in "--m 16 --n 10240 --k 8192" "--m 16 --n 28672 --k 4096" "--m 12 --n 6144 --k 4096" \
               "--m 8 --n 28672 --k 4096" "--m 1 --n 28672 --k 4096"; do
    core=small_m8; case "$shape" in "--m 1 "*) core=small_m1;; esac
    for v in small_m16 $core wgmma; do
      timeout 40 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 matmul-tc $shape --variant $v 2>&1 | rows
    done
    for v in small_m16 $core small_m4 persistent; do
      timeout 40 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 matmul-bf16 $shape --variant $v 2>&1 | rows
    done
  done
  exit 0
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
if [ "$part" = b ]; then
s=$(date +%s)
PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
s=$(date +%s)
PYTHONPATH="$site" timeout 100 python3 gpud/bt/python/bench_models.py --shapes $here/lm_heads.json --dtypes bf16,tf32,f32 \
  --json $OUT/torch-models-odd.json > $OUT/models-odd.log 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; cat $OUT/models-odd.log
s=$(date +%s)
PYTHONPATH="$site" timeout 150 python3 gpud/bt/python/bench_models.py --tokens 16 --dtypes tf32,bf16 \
  --json $OUT/torch-models-16.json > $OUT/models-16.log 2>&1
echo "bench_models 16 tokens rc $? in $(( $(date +%s) - s )) s"; cat $OUT/models-16.log
fi
[ "$part" = c ] || exit 0
s=$(date +%s)
PYTHONPATH="$site" timeout 120 python3 $here/../2026-12-05-e/ce_fused_toggle.py gpud/bt/python > "$OUT/ce-toggle.log" 2>&1
echo "ce toggle rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/ce-toggle.log"
s=$(date +%s)
PYTHONPATH="$site" timeout 150 python3 gpud/bt/python/bench_torch.py --json "$OUT/torch-ops.json" \
  --ops cross_entropy,row_sum,softmax,decode > "$OUT/torch-ops.log" 2>&1
echo "bench_torch rc $? in $(( $(date +%s) - s )) s"; cat "$OUT/torch-ops.log"
