#!/usr/bin/env bash
# Run k, part 9: the GPU family suite of the three matmul ladders on the final commit (2c410bd's
# kernels: the counters sized from the kernels' own Work), after the last change to the host side of
# the rungs. gpud/t: `cargo xtask gpu-bundle --for tests --tests host-gpu-test`.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
gpud/t/run.sh $OUT unpack > /dev/null 2>&1
s=$(date +%s)
TEST_FAMILIES=matmul,matmul_tc,matmul_bf16 timeout 300 gpud/t/tests/host-gpu-test every_registered_kernel \
  --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "^test |test result|FAILED|panicked" $OUT/tests.log | head
