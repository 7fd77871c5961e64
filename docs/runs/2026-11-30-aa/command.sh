#!/usr/bin/env bash
# Run aa: conv2d_rolling at six blocks per SM with coalesced 4-byte copies; ncu of its 5x5 launch;
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
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
timeout 120 ncu --kernel-name regex:'^conv2d_rolling$' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
  $b/host --backend gpu conv2d --height 8192 --width 8192 --filter 5 --variant rolling --runs 3 > $OUT/ncu.txt 2>&1
echo "ncu rc $?" >> $OUT/run.txt
TEST_FAMILIES=conv2d timeout 300 bash $b/run.sh $OUT tests > $OUT/tests-run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
rm -f $OUT/tests-run.txt
