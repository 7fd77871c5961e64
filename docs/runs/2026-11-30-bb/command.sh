#!/usr/bin/env bash
# Run bb: the session's kernels after their last changes. The GPU suite for matmul_bf16 (the tensor
# map encoder was generalised), attention and attention_causal; the PyTorch extension (attention's
# auto on the TMA rung); the criterion benches of the three families with the bf16 twins and
# PyTorch's SDPA as anchors (bench.json); memcheck and racecheck over every kernel.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=matmul_bf16,attention,attention_causal timeout 200 $b/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.log 2>&1
echo "tests rc $?" > $OUT/run.txt
grep -E "test result|FAILED|panicked" $OUT/tests.log >> $OUT/run.txt
timeout 150 bash $b/run.sh $OUT/torch torch > $OUT/torch-run.log 2>&1
echo "torch rc $?" >> $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
export BENCH_FAMILIES=matmul_bf16,attention,attention_causal
python3 $b/pytorch/anchors.py > $OUT/pytorch.json 2> $OUT/bench.log
echo "anchors rc $?" >> $OUT/run.txt
CUDA_C_PTX=$b/cuda-c PYTORCH_JSON=$OUT/pytorch.json BENCH_JSON=$OUT/bench.json timeout 240 $b/bench-kernels --bench >> $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/run.txt
tail -2 $OUT/bench.log >> $OUT/run.txt
for tool in memcheck racecheck; do
  echo "== $tool" >> $OUT/sanitizer.txt
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu smoke >> $OUT/sanitizer.txt 2>&1
  echo "$tool rc $?" >> $OUT/run.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
