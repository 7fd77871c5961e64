#!/usr/bin/env bash
# Run bk: change 90, split-k split as many ways as one wave of its blocks holds; beside its twin
# (same splits) and cuBLAS at 1024³ and the three skinny shapes; the matmul GPU suite.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/cc && nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_split_k.cu -o /tmp/cc/matmul_split_k.ptx >> $OUT/prep.txt 2>&1; echo "nvcc rc $?" >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c /tmp/cc"
{
for s in "8192 64 8192" "64 8192 8192" "256 256 65536" "1024 1024 1024"; do
  set -- $s
  timeout 60 $h matmul --m $1 --n $2 --k $3 --variant matmul_split_k --runs 20
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 120 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; grep -E "cublas|split_k|Rust/CUDA C" $OUT/demos.txt | cut -c1-130
