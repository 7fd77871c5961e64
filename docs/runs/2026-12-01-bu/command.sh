#!/usr/bin/env bash
# Run bu: change 95, split-k without zeroing C (run 0 stores, the other runs wait on a per-tile
# counter and add): the matmul GPU suite; memcheck and racecheck over every matmul kernel at split
# shapes; every f32 twin rebuilt (all take the counters now); the split tiles beside their twins
# and cuBLAS at 1024³ and the skinny shapes, twice; every tile beside its twin at 2048³ and
# 4097×3073×2049; `auto` at the ten bench shapes.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/cc
for f in naive tiled tiled_padded register_1d register_2d vectorized double_buffered warp_tiled split_k; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_$f.cu -o /tmp/cc/matmul_$f.ptx >> $OUT/prep.txt 2>&1 &
done
wait; ls /tmp/cc | wc -l >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 90 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c /tmp/cc"
{
for round in 1 2; do
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 8192 --n 64 --k 8192 --variant matmul_split_k_128x64 --runs 20
timeout 30 $h matmul --m 64 --n 8192 --k 8192 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 256 --n 256 --k 65536 --variant matmul_split_k_64x128 --runs 20
done
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k --runs 20
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_128x64 --runs 20
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
{
timeout 60 $h matmul --m 2048 --n 2048 --k 2048 --variant all --runs 10
timeout 60 $h matmul --m 4097 --n 3073 --k 2049 --variant all --runs 10
} > $OUT/twins.txt 2>&1; echo "twins rc $?" >> $OUT/run.txt
for s in "1024 1024 1024" "8192 64 8192" "64 8192 8192" "256 256 65536" "8192 8192 64" "4097 3073 2049" "2048 2048 2048" "4096 4096 4096" "8192 2048 4096" "8192 8192 8192"; do
  set -- $s
  timeout 40 $h matmul --m $1 --n $2 --k $3 --variant auto --runs 20 >> $OUT/auto.txt 2>&1; echo "auto $s rc $?" >> $OUT/run.txt
done
for s in "40 68 1024" "2 3 1000" "301 519 999"; do
  set -- $s
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant all --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $s rc $?" >> $OUT/run.txt
done
for v in matmul_split_k matmul_split_k_128x64 matmul_split_k_64x128; do
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 999 --variant $v --runs 1 --warmup 0 >> $OUT/race.txt 2>&1; echo "racecheck $v rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt $OUT/race.txt
grep -E "cublas|Rust/CUDA C" $OUT/demos.txt | cut -c1-140
