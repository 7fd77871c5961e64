#!/usr/bin/env bash
# Run ca: the serpentine outer product as an A/B. The Rust PTX with `warp_tiled::outer_product`
# walking B's columns backwards on odd rows of A's fragment (ab/serp, made here, not committed:
# `cargo xtask build-ptx` with that change, then `python3 docs/runs/2026-12-01-bn/strip_entries.py
# target/ptx/sm_90a/kernels.ptx ab/serp/serpentine.ptx <the five entries>`), its entries renamed
# `<kernel>_cuda` and loaded as the "CUDA C" twin beside the committed Rust kernels: same process,
# same launch shapes. Rust/CUDA C > 1 means the committed order is faster.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c ab/serp"
for round in 1 2; do
  for s in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048"; do
    set -- $s
    for v in matmul_multistage_128x256 matmul_multistage matmul_warp_tiled_128x256_wide; do
      echo "== round $round"; timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
    done
  done
  for v in matmul_multistage_128x64 matmul_warp_tiled; do
    echo "== round $round"; timeout 60 $h matmul --m 1024 --n 1024 --k 1024 --variant $v --runs 20
    echo "== round $round"; timeout 60 $h matmul --m 4097 --n 3073 --k 2049 --variant $v --runs 20
  done
done > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "^== |Rust/CUDA C" $OUT/demos.txt | paste - - | cut -c1-160
