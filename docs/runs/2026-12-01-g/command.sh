# Run g: change 68 (a call's cost cut): the external-array refusals, a GPU suite slice, the PyTorch
# extension's tests, its benchmark with the per-call figures, and call_cost.py after the change.
# (The suite slice named `elementwise`, which is not a family: the harness refused it; run h repeats it.)
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 100 /tmp/tt/tests/host-gpu_external-test --include-ignored > $OUT/tests.txt 2>&1; echo "external rc $?" > $OUT/run.txt
TEST_FAMILIES=vec_add,elementwise,matmul_tc timeout 200 /tmp/tt/tests/host-gpu-test --include-ignored >> $OUT/tests.txt 2>&1; echo "gpu-test rc $?" >> $OUT/run.txt
timeout 300 bash $b/run.sh $OUT/torch torch > /dev/null 2>&1; echo "torch rc $?" >> $OUT/run.txt
grep -E "^test result|FAILED|panicked" $OUT/tests.txt >> $OUT/run.txt
grep -E "^Ran|^OK|FAILED|per call" $OUT/torch/torch.log >> $OUT/run.txt
cat $OUT/run.txt
cat $OUT/torch/torch.log | grep -A20 "rust_kernels.add(a, b), eager" | head -16
