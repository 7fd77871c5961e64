#!/usr/bin/env bash
# Run at: change 83, the scans on 128-thread blocks (tiles of 4096, eight look-back blocks per SM,
# as CUB's 128-thread tiles): the ordered look-back scan beside its twin and CUB from 2^22 to 2^30,
# the warp walk at 2^28, the scan families' GPU suite.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for k in 22 24 26 28 30; do
  timeout 90 $h scan --n $((1 << k)) --variant scan_look_back_ordered --runs 20
done
timeout 60 $h scan --n $((1 << 28)) --variant scan_look_back_warp --runs 20
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=scan,scan_i32 timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt
grep -E "cub_inclusive|scan_look_back|Rust/CUDA C" $OUT/demos.txt | cut -c1-130
