#!/usr/bin/env bash
# Run 2026-12-07 r: what changes 160-168 left unchecked, from main at 16d8fa9. carry ["gpud"]:
#   gpud/host.gz  the host demo; gpud/t the GPU test binaries
#   (`cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t`);
#   gpud/bt the wheel (`cargo xtask gpu-bundle --for torch --out gpud/bt`).
# `command.sh tests`: the driver's first compilation of the PTX once, then the GPU suite of the
# FP8 and bf16 families (every kernel at edge and large shapes against f64) and every family's
# special values on the GPU. `command.sh suites`: run 2026-12-07 p's suites with this wheel
# (docs/runs/2026-12-07-q/python.sh suites): the model shapes in FP8 against torch._scaled_mm and
# in bf16 against PyTorch.
set -u
part=${1:-tests}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
if [ "$part" = suites ]; then exec bash docs/runs/2026-12-07-q/python.sh suites; fi
exec > >(tee -a "$OUT/$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
gunzip -c gpud/host.gz > $x/host && chmod +x $x/host
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
s=$(date +%s); timeout 200 $x/host --backend gpu --warmup 0 --runs 1 matmul-fp8 --m 16 --n 128 --k 256 --variant swapped 2>&1 | tail -2; echo "first call $(( $(date +%s) - s )) s"
bash gpud/t/run.sh $OUT/unpacked unpack || exit 2
s=$(date +%s)
TEST_FAMILIES=matmul_fp8,matmul_fp8_rowwise,matmul_fp8_blockwise,matmul_fp8_rowwise_promoted,quantize_fp8,matmul_bf16,matmul_bf16_rounded \
  timeout ${SUITE_S:-260} gpud/t/tests/host-gpu-test --include-ignored every_registered > $OUT/suite.log 2>&1
echo "suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|failed|panicked|checking only" $OUT/suite.log | head -20
[ -n "${SKIP_SPECIAL:-}" ] && exit 0
s=$(date +%s)
timeout 150 gpud/t/tests/host-special_values-test on_the_gpu --include-ignored > $OUT/special.log 2>&1
echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/special.log | head -20
date -u
