#!/usr/bin/env bash
# Run ar: the GPU family test on the sm_90a PTX for the families this session did not run (two
# groups, each under its own time limit), then the managed-memory tests that run aq's time limit
# cut off.
set -u
b=target/gpu-bundle
tar -xzf $b/tests.tar.gz -C $b
{
for group in vec_add,shared_mem_add,transpose,conv2d,gather,reduce,reduce_max,row_sum,row_max \
             histogram,histogram_f32,scan,scan_i32,softmax,warp_probe,atomic_probe,bank_probe; do
  echo "== families $group"
  TEST_FAMILIES=$group timeout 260 $b/tests/host-gpu-test --include-ignored every_registered_kernel_matches
  echo "rc $?"
done
echo "== managed"
timeout 60 $b/tests/host-gpu-test --include-ignored managed
echo "rc $?"
} > $OUT/tests.log 2>&1
grep -E "^== |test result|FAILED|panicked|^rc" $OUT/tests.log > $OUT/run.txt
