#!/usr/bin/env bash
# Run bq: changes 91–93 as committed (the wide 128×128 tile staging its 4-byte path, the
# other tiles and split-k overlapping it): the matmul GPU suite; memcheck; each tile
# beside its twin at 4096³, the odd shape and k = 64, each split-k tile at the skinny shapes and 1024³;
# `host autotune --family matmul` for the carried profile.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 240 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for s in "301 519 99" "40 68 1024" "2 3 1000"; do
  set -- $s
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant all --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $s rc $?" >> $OUT/run.txt
done
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "4096 4096 4096" "4097 3073 2049" "8192 8192 64"; do
  set -- $s
  for v in matmul_warp_tiled matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide matmul_warp_tiled_128x64 matmul_warp_tiled_64x64; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
for s in "8192 64 8192" "64 8192 8192" "256 256 65536" "1024 1024 1024"; do
  set -- $s
  for v in matmul_split_k matmul_split_k_128x64 matmul_split_k_64x128; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
timeout 200 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "Rust/CUDA C" $OUT/demos.txt | cut -c1-140
grep -A14 "occupancy rule" $OUT/autotune.txt | head -16
