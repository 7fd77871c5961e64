#!/usr/bin/env bash
# Run bh: the CUDA C twins of rung 1 (attention_flash, attention_causal_flash), compiled by nvcc
# from benches/reference/cuda_c, beside the Rust kernels in the demos (b8 h16 s4096, d128 both
# masks, d64) and checked at the edge shapes' largest (1x131x128) and a mid size.
set -u
b=target/gpu-bundle
mkdir -p $b/cuda-c
for k in attention_flash attention_causal_flash; do
  nvcc -arch=sm_90a -O3 -ptx benches/reference/cuda_c/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
  echo "nvcc $k rc $?" >> $OUT/run.txt
done
for demo in "attention" "attention-causal" "attention --dim 64" "attention --heads 3 --seq 131 --dim 128" "attention-causal --heads 2 --seq 129 --dim 64"; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c $demo --runs 10 >> $OUT/perf.txt 2>&1
  echo "$demo rc $?" >> $OUT/run.txt
done
