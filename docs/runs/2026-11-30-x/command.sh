#!/usr/bin/env bash
# Run x: split_k and look-back backoff first measured, then the GPU suite for matmul and scan.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for shape in "256 256 65536" "8192 64 8192" "64 8192 8192" "1024 1024 1024" "2048 2048 2048"; do
  set -- $shape
  for v in split_k warp_tiled_64x64 auto; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
for n in 16777216 268435456 1073741824; do
  for v in look_back_backoff look_back_warp look_back_ordered; do
    timeout 60 $h scan --n $n --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
TEST_FAMILIES=matmul,scan timeout 330 bash $b/run.sh $OUT tests > $OUT/tests-run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
