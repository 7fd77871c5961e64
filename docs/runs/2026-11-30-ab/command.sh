#!/usr/bin/env bash
# Run ab: conv2d_rolling_v8 (eight outputs per lane) against _v4; GPU suite (conv2d) + sanitizers.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep >> $OUT/run.txt 2>&1
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8192 8192 5" "8192 8192 3" "8192 8192 7" "16384 16384 5" "4096 4096 5" "8191 4097 5"; do
  set -- $s
  for v in rolling_v8 rolling_v4; do
    timeout 60 $h conv2d --height $1 --width $2 --filter $3 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
TEST_FAMILIES=conv2d timeout 300 bash $b/run.sh $OUT tests > $OUT/tests-run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
rm -f $OUT/tests-run.txt
