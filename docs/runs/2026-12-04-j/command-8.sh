#!/usr/bin/env bash
# Run j, part 8: the twins after their meeting in C moved to one header (k_runs.cuh): the split-k
# and small-m twins beside their Rust kernels, each checked against the f64 reference, at shapes
# that split k (gpud/tw: the nvcc-made PTX of this commit's twins; gpud/host_now.gz: the host).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
x=/tmp/j; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
for family in matmul matmul-tc matmul-bf16; do
  for v in small_m1 small_m4 small_m8; do
    for size in "--m 1 --n 28672 --k 4096" "--m 12 --n 1027 --k 2051"; do
      $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 20 $family $size --variant $v 2>&1 | rows
    done
  done
done
for v in split_k split_k_128x64 split_k_64x128; do
  $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 20 matmul --m 256 --n 256 --k 65536 --variant $v 2>&1 | rows
done
