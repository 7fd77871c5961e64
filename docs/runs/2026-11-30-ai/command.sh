#!/usr/bin/env bash
# Run ai: vec_add_vectorized first on a GPU (against the seed's kernel, its twin and the copy; the
# GPU suite for vec_add with the managed tests; memcheck over every kernel), thrashing with the
# fast read and the overlapped copies, and the PyTorch extension with the new add.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
mkdir -p $b/cuda-c
for k in vec_add vec_add_vectorized; do
  nvcc -arch=sm_90 -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1
done
{
for n in 67108864 268435456 1000003; do
  timeout 60 $b/host --backend gpu --cuda-c $b/cuda-c vec-add --n $n --variant all --runs 30
done
timeout 120 $b/host --backend gpu managed thrashing
echo "thrashing rc $?"
} > $OUT/demos.txt 2>&1
tail -n 14 $OUT/demos.txt >> $OUT/run.txt
tar -xzf $b/tests.tar.gz -C $b
TEST_FAMILIES=vec_add timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.log 2>&1
echo "gpu tests rc $?" >> $OUT/run.txt
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu smoke > $OUT/sanitizer.txt 2>&1
echo "memcheck rc $?" >> $OUT/run.txt
timeout 180 bash $b/run.sh $OUT torch >> $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
