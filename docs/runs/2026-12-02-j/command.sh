#!/usr/bin/env bash
# Run j (2026-12-02), commit d4dbc2e's kernels (bundle `cargo xtask gpu-bundle --for check`,
# carried as target/gpu-bundle): softmax after its running sum starts at the lowest finite value
# instead of testing each entry for -inf (issue 41): special values on the GPU, the softmax GPU
# suite, and the speed against the CUDA C twins (changed alike) at run h's and run i's shapes; the
# scan pair run i misnamed.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?"; grep -i "error" /tmp/prep.txt | head -5
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH CUB_ANCHORS=$b/libcub_anchors.so
cd $b
timeout 120 tests/host-special_values-test --include-ignored 2>&1 | grep -E "^test |test result|failures|row "
TEST_FAMILIES=softmax timeout 200 tests/host-gpu-test --include-ignored every_registered 2>&1 | grep -E "^test |test result"
cd - > /dev/null
H="$b/host --backend gpu --cuda-c $b/cuda-c"
for round in 1 2; do
  $H --runs 50 softmax --variant all 2>&1 | grep -E "Rust/CUDA C|error"
done
$H --runs 50 softmax --rows 4096 --cols 50257 --variant all 2>&1 | grep -E "Rust/CUDA C|error"
$H --runs 50 softmax --rows 16384 --cols 768 --variant all 2>&1 | grep -E "Rust/CUDA C|error"
$H --runs 100 scan-i32 --n 268435456 --variant scan_look_back_staged_i32 2>&1 | grep -E "Rust/CUDA C|error"
