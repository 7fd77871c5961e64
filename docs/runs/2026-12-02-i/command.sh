#!/usr/bin/env bash
# Run i (2026-12-02), commit 7c21724 (bundle `cargo xtask gpu-bundle --for check`, carried as
# target/gpu-bundle; this script carried as target/ab-carry/run-i.sh): softmax on special values
# (issue 41: -inf tested per entry, the first fix) on the GPU and its speed against the CUDA C twins
# (fixed alike); then the five host-all pairs of run h that moved by more than 1 % from run e, timed
# again with 100 runs (issue 37; the scan pair's variant was misnamed, run j times it).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH CUB_ANCHORS=$b/libcub_anchors.so
cd $b
timeout 120 tests/host-special_values-test --include-ignored 2>&1 | grep -E "^test |test result|failures|row "
TEST_FAMILIES=softmax timeout 200 tests/host-gpu-test --include-ignored every_registered 2>&1 | grep -E "^test |test result|TEST_FAMILIES"
cd - > /dev/null
H="$b/host --backend gpu --cuda-c $b/cuda-c"
$H --runs 50 softmax --variant all 2>&1 | grep -E "Rust/CUDA C|error"
$H --runs 50 softmax --rows 4096 --cols 50257 --variant all 2>&1 | grep -E "Rust/CUDA C|error"
$H --runs 50 softmax --rows 16384 --cols 768 --variant all 2>&1 | grep -E "Rust/CUDA C|error"
for round in 1 2; do
  $H --runs 100 matmul --m 4096 --n 4096 --k 4096 --variant vectorized
  $H --runs 100 matmul --m 4096 --n 4096 --k 4096 --variant warp_tiled_128x128_wide
  $H --runs 100 matmul --m 4096 --n 4096 --k 4096 --variant warp_tiled_128x256_wide
  $H --runs 100 scan-i32 --n 268435456 --variant look_back_staged_i32
  $H --runs 100 transpose --rows 8192 --cols 8192 --variant swizzled
done 2>&1 | grep -E "Rust/CUDA C|error"
