#!/usr/bin/env bash
# Run bm: changes 91 (the 4-byte path prefetched) and 92 (split-k on 128×64 and 64×128 tiles):
# every warp-tiled configuration beside its twin and cuBLAS at the odd shape, 2048³ and 4096³;
# the three split-k configurations at the skinny shapes and 1024³; the matmul GPU suite; memcheck
# on a 4-byte shape and a split 16-byte shape.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "4097 3073 2049" "4096 4096 4096" "2048 2048 2048"; do
  set -- $s
  for v in matmul_warp_tiled matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide matmul_warp_tiled_128x64 matmul_warp_tiled_64x64; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
for s in "8192 64 8192" "64 8192 8192" "256 256 65536" "1024 1024 1024" "4097 3073 2049"; do
  set -- $s
  for v in matmul_split_k matmul_split_k_128x64 matmul_split_k_64x128; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 240 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for s in "301 519 99" "40 68 1024" "2 3 1000"; do
  set -- $s
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant all --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $s rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "Rust/CUDA C|cublas" $OUT/demos.txt | cut -c1-140
