# Run l: change 69 with gradients through torch.autograd.Function instead of a kernel on the
# operator: the extension's tests, its benchmark and call_cost.py.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
timeout 400 bash $b/run.sh $OUT/torch torch > /dev/null 2>&1; echo "torch rc $?" > $OUT/run.txt
grep -E "^Ran|^OK|FAILED|ERROR|Error|per call" $OUT/torch/torch.log >> $OUT/run.txt
cat $OUT/run.txt
grep -E "rust/pytorch" $OUT/torch/torch.log
grep -B2 -A12 "^FAIL:\|^ERROR:" $OUT/torch/torch.log | head -60
grep -A40 "rust_kernels.add(a, b), eager" $OUT/torch/torch.log | head -24
