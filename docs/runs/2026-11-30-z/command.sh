#!/usr/bin/env bash
# Run z: conv2d_rolling with bands sized from the device; matmul --variant auto on the new profile;
# GPU suite (conv2d) + sanitizers.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep >> $OUT/run.txt 2>&1
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for f in 5 3 7; do
  timeout 60 $h conv2d --height 8192 --width 8192 --filter $f --variant rolling --runs 30
done
for s in "4096 4096 5" "16384 16384 5" "8191 4097 5" "8191 4097 7" "8192 8192 5"; do
  set -- $s
  timeout 60 $h conv2d --height $1 --width $2 --filter $3 --variant rolling --runs 30
done
for shape in "256 256 65536" "8192 64 8192" "64 8192 8192" "1024 1024 1024"; do
  set -- $shape
  timeout 60 $h matmul --m $1 --n $2 --k $3 --variant auto --runs 20
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
$b/host --backend gpu info > $OUT/info.txt 2>&1
TEST_FAMILIES=conv2d timeout 300 bash $b/run.sh $OUT tests > $OUT/tests-run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
rm -f $OUT/tests-run.txt
