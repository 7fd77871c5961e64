#!/usr/bin/env bash
# Run h (2026-12-02), after run g, same bundle: the ten kernels whose SASS the crate split had
# changed, timed in the same rounds against their build from before the split (the PTX of commit
# 6229d46, those ten entries renamed *_cuda: target/ab-carry/before-split.ptx, loaded as the "CUDA C"
# twin: Rust/CUDA C = now/before); then `host all` against the real CUDA C twins.
set -u
b=target/gpu-bundle
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/ab.txt; }
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/ab.txt; stamp prep
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH CUB_ANCHORS=$b/libcub_anchors.so
mkdir -p /tmp/ab /tmp/abjson; cp target/ab-carry/before-split.ptx /tmp/ab/
H=$b/host
for shape in "1024 1024 1024" "4096 4096 4096" "8192 8192 8192" "8192 64 8192" "64 8192 8192" "256 256 65536" "4097 3073 2049"; do
  set -- $shape
  for v in warp_tiled warp_tiled_128x64 warp_tiled_64x64 warp_tiled_128x128_wide warp_tiled_128x256_wide split_k split_k_128x64 split_k_64x128; do
    timeout 60 $H --backend gpu --cuda-c /tmp/ab --runs 30 matmul --m $1 --n $2 --k $3 --variant $v --json-out /tmp/abjson/matmul-$1x$2x$3-$v.json >> $OUT/ab.txt 2>&1 || echo "matmul $shape $v failed" >> $OUT/ab.txt
  done
done
stamp matmul
for f in 3 5 7; do for v in blocked_v4 blocked_v8; do
  timeout 60 $H --backend gpu --cuda-c /tmp/ab --runs 30 conv2d --height 8192 --width 8192 --filter $f --variant $v --json-out /tmp/abjson/conv2d-$f-$v.json >> $OUT/ab.txt 2>&1 || echo "conv2d $f $v failed" >> $OUT/ab.txt
done; done
stamp conv2d
tar -czf $OUT/ab-json.tgz -C /tmp abjson
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left $H --backend gpu --cuda-c $b/cuda-c all --json-out $OUT/all.json > $OUT/all.txt 2>&1; echo "all rc $?" >> $OUT/ab.txt
stamp all
grep -E "Rust|CUDA C|rc|at [0-9]+ s|failed" $OUT/ab.txt | tail -40
