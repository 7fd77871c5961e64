#!/usr/bin/env bash
# Run bt: change 94, C zeroed by the driver's memset before a split product: the matmul GPU suite;
# memcheck over every kernel at two split shapes; the split tiles beside their twins (the same
# memset) and cuBLAS at 1024³ and the skinny shapes.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/cc && nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_split_k.cu -o /tmp/cc/matmul_split_k.ptx >> $OUT/prep.txt 2>&1; echo "nvcc rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 60 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c /tmp/cc"
{
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 8192 --n 64 --k 8192 --variant matmul_split_k_128x64 --runs 20
timeout 30 $h matmul --m 64 --n 8192 --k 8192 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 256 --n 256 --k 65536 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k --runs 20
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_128x64 --runs 20
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
for s in "40 68 1024" "2 3 1000"; do
  set -- $s
  timeout 40 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant all --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $s rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "cublas|Rust/CUDA C" $OUT/demos.txt | cut -c1-140
