#!/usr/bin/env bash
# Run bn: where change 91 slowed the wide 128×128 tile. The Rust PTX of the warp-tiled kernels
# before change 91 (commit 33fa0a4: ab/old) and of change 91 with one loop for both paths and the
# 4-byte path's elements in the 16-byte path's registers (ab/one), each with its entries renamed
# `<kernel>_cuda` and loaded as the "CUDA C" twin beside run bm's Rust kernels (two loops): same
# process, same launch shapes.
# ab/ was made here, not committed: `cargo xtask build-ptx` at 33fa0a4 (ab/old) and at change 91
# with one loop (ab/one), then `python3 docs/runs/2026-12-01-bn/strip_entries.py
# target/ptx/sm_90a/kernels.ptx ab/old/warp_tiled_old.ptx <the five warp-tiled entries>`.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for form in old one; do
  h="$b/host --backend gpu --cuda-c ab/$form"
  for s in "4096 4096 4096" "8192 8192 8192" "4097 3073 2049"; do
    set -- $s
    for v in matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide matmul_warp_tiled matmul_warp_tiled_128x64 matmul_warp_tiled_64x64; do
      echo "== against $form"; timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
    done
  done
done > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "^== |Rust/CUDA C" $OUT/demos.txt | paste - - | cut -c1-150
