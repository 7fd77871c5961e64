#!/usr/bin/env bash
# Run bg: the wide warp-tiled configurations as committed (128×128 and 128×256 tiles, 64×64 warp
# tiles): `host autotune --family matmul` for the carried profile, then `--variant auto` at every
# bench shape beside cuBLAS, and the two wide kernels with their twins at 4096³ and 8192³.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
timeout 240 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
export KERNELS_TILE_PROFILE=$OUT/tile-profile.json
{
for s in "1024 1024 1024" "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "8192 2048 4096" "8192 64 8192" "64 8192 8192" "8192 8192 64" "256 256 65536" "4097 3073 2049"; do
  set -- $s
  timeout 60 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant auto --runs 20
done
} > $OUT/auto.txt 2>&1; echo "auto rc $?" >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in 4096 8192; do
  for v in matmul_warp_tiled matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide; do
    timeout 60 $h matmul --m $s --n $s --k $s --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "auto|cublas|chose|choice|picked" $OUT/auto.txt | cut -c1-230
grep -E "Rust/CUDA C" $OUT/demos.txt
