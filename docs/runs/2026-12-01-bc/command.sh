#!/usr/bin/env bash
# Run bc: change 86, the staged scan's look-back reading 32, 64 or 128 tiles per round trip
# (scan_look_back_staged, _w64, _w128), each beside CUB in its own process, 2^24 to 2^30,
# interleaved twice.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
bash $b/run.sh /tmp/unpacked unpack > /dev/null 2>&1
nvcc -arch=sm_90a -O3 -shared -Xcompiler -fPIC $b/cub/anchors.cu -o /tmp/libcub_anchors.so > $OUT/nvcc.txt 2>&1; echo "nvcc rc $?" > $OUT/run.txt
export CUB_ANCHORS=/tmp/libcub_anchors.so
{
for round in 1 2; do
  for k in 24 26 28 30; do
    for v in scan_look_back_staged scan_look_back_staged_w64 scan_look_back_staged_w128; do
      timeout 60 $b/host --backend gpu scan --n $((1 << k)) --variant $v --runs 20
    done
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^\| scan .*(cub_|scan_look_back)" $OUT/demos.txt | awk -F'|' '{print $3, $4, $6}'
