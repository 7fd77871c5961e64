#!/usr/bin/env bash
# Run bo: the mixed form (the wide 128×128 and 128×128 tiles staging their 4-byte path between
# steps as before change 91, the others overlapping it) as the "CUDA C" twin (ab/mix), and the
# PTX before change 91 (ab/old), each beside run bm's Rust kernels (every tile overlapping).
# ab/mix was made as run bn's ab/ (its strip_entries.py) from this change's PTX.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for form in mix old; do
  h="$b/host --backend gpu --cuda-c ab/$form"
  for s in "8192 8192 8192" "4096 4096 4096" "4097 3073 2049" "8192 8192 64"; do
    set -- $s
    for v in matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide matmul_warp_tiled matmul_warp_tiled_128x64 matmul_warp_tiled_64x64; do
      echo "== against $form"; timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
    done
  done
done > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "^== |Rust/CUDA C" $OUT/demos.txt | paste - - | cut -c1-150
