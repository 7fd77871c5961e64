#!/usr/bin/env bash
# Run c (2026-12-04): the three kernels whose PTX change 106's entry moved without taking views,
# before (62052e0) and after (751c037), each beside its CUDA C twin (twins_m: nvcc-made PTX),
# median of 30, three rounds. The command itself was not recorded; this is what the log shows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
g=gpuab
{
  date
  for round in 1 2 3; do
    for side in before after; do
      echo "== round $round $side"
      for v in matmul_double_buffered matmul_register_1d; do
        $g/host_$side --backend gpu --cuda-c $g/twins_m --runs 30 matmul --variant $v 2>&1
      done
      $g/host_$side --backend gpu --cuda-c $g/twins_m --runs 30 matmul-bf16 --variant matmul_bf16_pipelined 2>&1
    done
  done
} > $OUT/ab_m.log
