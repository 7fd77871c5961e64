#!/usr/bin/env bash
# Run br: as committed, the carried profile's matmul part from run bq: `--variant auto` beside
# cuBLAS at every bench shape; the two fastest tiles at 8192³ beside their twins.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
{
for s in "1024 1024 1024" "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "8192 2048 4096" "8192 64 8192" "64 8192 8192" "8192 8192 64" "256 256 65536" "4097 3073 2049"; do
  set -- $s
  timeout 60 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant auto --runs 20
done
} > $OUT/auto.txt 2>&1; echo "auto rc $?" >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for v in matmul_warp_tiled matmul_warp_tiled_128x256_wide; do
  timeout 60 $h matmul --m 8192 --n 8192 --k 8192 --variant $v --runs 20
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^\| matmul" $OUT/auto.txt | cut -c1-130
grep -E "Rust/CUDA C" $OUT/demos.txt
