#!/usr/bin/env bash
# Run c (2026-12-03): change 104 (the maxima by one max.NaN.f32; bundles `cargo xtask gpu-bundle
# --for tests --tests host-special_values-test,host-gpu-test --out target/gpu-bundle-sv` and `--for
# torch --out target/gpu-bundle-torch`), without run.sh's prep (only the two row twins compiled):
# 1. the special-value checks of every family, three random streams;
# 2. the four kernels against their build from before change 103 (target/ab-carry/before-max.ptx, as
#    in run b: Rust/CUDA C = now/before), two rounds; the row maxima against their CUDA C twins
#    (MaxOp now the same instruction);
# 3. the Python operators against PyTorch: test_special_values.py and test_torch.py;
# 4. the whole GPU suite (host-gpu-test), last: it ran past run a's 300 s limit.
set -u
b=target/gpu-bundle-sv; t=target/gpu-bundle-torch
bash $b/run.sh /tmp/x unpack; echo "unpack rc $?"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for stream in 44 55 66; do
  (cd $b && KERNELS_TEST_RNG=$stream timeout 120 tests/host-special_values-test --include-ignored) > $OUT/special-$stream.log 2>&1
  echo "stream $stream: $(grep -E '^test result' $OUT/special-$stream.log)"; grep -E "FAILED|at seq|O\[" $OUT/special-$stream.log | head -5
done
mkdir -p /tmp/ab /tmp/tw && cp target/ab-carry/before-max.ptx /tmp/ab/
for k in row_max_block row_max_warp; do nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o /tmp/tw/$k.ptx || echo "nvcc $k failed"; done
H="$b/host --backend gpu"
for round in 1 2; do
  $H --cuda-c /tmp/ab --runs 50 row-max 2>&1 | grep -E "Rust/CUDA C|error"
  $H --cuda-c /tmp/ab --runs 50 reduce-max 2>&1 | grep -E "Rust/CUDA C|error"
  $H --cuda-c /tmp/ab --runs 50 softmax --variant registers 2>&1 | grep -E "Rust/CUDA C|error"
done
echo "== against the CUDA C twins"
$H --cuda-c /tmp/tw --runs 50 row-max 2>&1 | grep -E "Rust/CUDA C|error"
echo "== Python"
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $t/python/*.whl > $OUT/torch.log 2>&1
(cd $t/python/tests && PYTHONPATH=$site timeout 120 python3 -m unittest -v test_special_values test_torch) >> $OUT/torch.log 2>&1
grep -E "^Ran |^OK|FAILED|Error" $OUT/torch.log | tail -10
echo "== GPU suite"
(cd $b && timeout 360 tests/host-gpu-test --include-ignored) > $OUT/gpu-test.log 2>&1; echo "gpu-test rc $?"
grep -E "^test |^test result|panicked" $OUT/gpu-test.log | tail -20
