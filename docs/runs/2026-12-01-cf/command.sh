#!/usr/bin/env bash
# Run cf: padding against an XOR swizzle for the transposed A slice of the 2D register-blocked
# rungs (issue 11 asks which wins). ab/swz (made here, not committed): the PTX with swizzle.diff
# applied (A's slice dense, 16-byte chunk c of row kk stored at chunk c ^ kk), its
# matmul_vectorized and matmul_register_2d entries renamed `<kernel>_cuda` and loaded as the
# "CUDA C" twin beside the committed (padded) Rust kernels: same process, same launch shapes.
# Rust/CUDA C > 1: padding is faster. ptxas 13.0, sm_90a: vectorized 119 registers padded, 123
# swizzled (two blocks per SM both); register_2d 128 padded, 166 swizzled (one block per SM).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c ab/swz"
for round in 1 2; do
  for s in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048" "1024 1024 1024" "4097 3073 2049"; do
    set -- $s
    for v in matmul_vectorized matmul_register_2d; do
      echo "== round $round"; timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
    done
  done
done > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "^== |Rust/CUDA C" $OUT/demos.txt | paste - - | cut -c1-160
