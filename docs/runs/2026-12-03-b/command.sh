#!/usr/bin/env bash
# Run b (2026-12-03): after run a, with attention's oracle allowing the overflow of its unnormalised
# sums (bundles `cargo xtask gpu-bundle --for tests --tests host-special_values-test --out
# target/gpu-bundle-sv` and `--for torch --out target/gpu-bundle-torch`):
# 1. the special-value checks of every family on the emulator and the GPU, three random streams;
# 2. change 103 (maxima that propagate NaN) against its own build from before (the PTX of commit
#    7115c5f, its four changed entries renamed *_cuda: target/ab-carry/before-max.ptx, loaded as
#    the "CUDA C" twin: Rust/CUDA C = now/before), two rounds; then against the real CUDA C twins;
# 3. the Python operators against PyTorch: test_special_values.py and test_torch.py.
set -u
b=target/gpu-bundle-sv; t=target/gpu-bundle-torch
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?"; grep -i "error" /tmp/prep.txt | head -5
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH CUB_ANCHORS=$b/libcub_anchors.so
for stream in 11 22 33; do
  (cd $b && KERNELS_TEST_RNG=$stream timeout 120 tests/host-special_values-test --include-ignored) > $OUT/special-$stream.log 2>&1
  echo "stream $stream: $(grep -E '^test result' $OUT/special-$stream.log)"; grep -E "FAILED|at seq|O\[" $OUT/special-$stream.log | head -5
done
mkdir -p /tmp/ab && cp target/ab-carry/before-max.ptx /tmp/ab/
H="$b/host --backend gpu"
for round in 1 2; do
  $H --cuda-c /tmp/ab --runs 50 row-max 2>&1 | grep -E "Rust/CUDA C|error"
  $H --cuda-c /tmp/ab --runs 50 reduce-max 2>&1 | grep -E "Rust/CUDA C|error"
  $H --cuda-c /tmp/ab --runs 50 softmax --variant registers 2>&1 | grep -E "Rust/CUDA C|error"
done
echo "== against the CUDA C twins"
$H --cuda-c $b/cuda-c --runs 50 row-max 2>&1 | grep -E "Rust/CUDA C|error"
$H --cuda-c $b/cuda-c --runs 50 reduce-max 2>&1 | grep -E "Rust/|CUB|error"
$H --cuda-c $b/cuda-c --runs 50 softmax --variant registers 2>&1 | grep -E "Rust/CUDA C|error"
echo "== Python"
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $t/python/*.whl > $OUT/torch.log 2>&1
(cd $t/python/tests && PYTHONPATH=$site timeout 240 python3 -m unittest -v test_special_values test_torch) >> $OUT/torch.log 2>&1
grep -E "^Ran |^OK|FAILED|Error|ok$" $OUT/torch.log | tail -40
