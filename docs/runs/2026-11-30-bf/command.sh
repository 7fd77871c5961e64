#!/usr/bin/env bash
# Run bf: the session's final figures. The PyTorch extension (tests, and the benchmark with
# attention's auto on rung 5); the criterion benches of matmul_bf16 (with its twins), attention and
# attention_causal, with PyTorch's SDPA timed the same way as anchors (bench.json).
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
timeout 150 bash $b/run.sh $OUT/torch torch > /dev/null 2>&1
echo "torch rc $?" > $OUT/run.txt
mkdir -p $b/cuda-c
for k in matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
export BENCH_FAMILIES=matmul_bf16,attention,attention_causal
python3 $b/pytorch/anchors.py > $OUT/pytorch.json 2> $OUT/bench.log
echo "anchors rc $?" >> $OUT/run.txt
CUDA_C_PTX=$b/cuda-c PYTORCH_JSON=$OUT/pytorch.json BENCH_JSON=$OUT/bench.json timeout 300 $b/bench-kernels --bench >> $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/run.txt
tail -2 $OUT/bench.log >> $OUT/run.txt
