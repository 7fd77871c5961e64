#!/usr/bin/env bash
# Run ba: the staged scan on i32 (scan_look_back_staged_i32) beside the i32 warp walk, its twin and
# CUB at 2^24 and 2^28; the i32 family's GPU suite; memcheck and racecheck on it; then the PyTorch
# extension (run.sh's torch mode), whose cumsum `auto` now takes the staged scan.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
grep -A1 "scan_look_back_staged_i32_cuda\|scan_look_back_warp_i32_cuda" /tmp/prep-out/environment.txt | grep -E "Compiling|registers" > $OUT/ptxas.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for k in 24 28; do
  for v in scan_look_back_warp_i32 scan_look_back_staged_i32; do
    timeout 60 $h scan-i32 --n $((1 << k)) --variant $v --runs 20
  done
done
timeout 60 $h scan --n $((1 << 28)) --variant auto --runs 20
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=scan_i32 timeout 150 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for t in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu scan-i32 --n 1000003 --variant scan_look_back_staged_i32 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t rc $?" >> $OUT/run.txt
done
timeout 300 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt; cat $OUT/ptxas.txt | cut -c1-150
grep -E "cub_|scan_look_back|Rust/CUDA C|auto" $OUT/demos.txt | cut -c1-130
tail -25 $OUT/torch-mode.txt
