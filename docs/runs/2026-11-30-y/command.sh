#!/usr/bin/env bash
# Run y: conv2d_rolling first measured; matmul autotune with split-k; GPU suite (conv2d) + sanitizers.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for f in 5 3 7; do
  for v in rolling blocked_v8 blocked_v4; do
    timeout 60 $h conv2d --height 8192 --width 8192 --filter $f --variant $v --runs 20
  done
done
timeout 60 $h conv2d --height 8191 --width 4097 --filter 5 --variant rolling --runs 20
timeout 60 $h conv2d --height 8191 --width 4097 --filter 7 --variant rolling --runs 20
timeout 60 $h conv2d --height 4096 --width 4096 --filter 5 --variant rolling --runs 20
timeout 60 $h conv2d --height 16384 --width 16384 --filter 5 --variant rolling --runs 20
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
timeout 150 $b/host --backend gpu autotune --family matmul --out $OUT/profile.json > $OUT/autotune.txt 2>&1
echo "autotune rc $?" >> $OUT/run.txt
TEST_FAMILIES=conv2d timeout 280 bash $b/run.sh $OUT tests > $OUT/tests-run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
