#!/usr/bin/env bash
# Run ad: first GPU measurements of transpose_peeled, the V4 eight-row ring, gather, and the three
# managed scenarios (migration, thrashing, partial).
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep >> $OUT/run.txt 2>&1
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8191 4097" "4097 8191" "8192 8192" "16383 16385"; do
  set -- $s
  timeout 60 $h transpose --rows $1 --cols $2 --variant all --runs 30
done
for s in "8192 8192 5" "8192 8192 3" "8192 8192 7" "16384 16384 5" "4096 4096 5" "8191 4097 5"; do
  set -- $s
  for v in rolling_v4 rolling_v8; do
    timeout 60 $h conv2d --height $1 --width $2 --filter $3 --variant $v --runs 30
  done
done
timeout 60 $h gather --variant all --runs 30
timeout 60 $h gather --n 67108864 --len 268435456 --variant all --runs 30
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
{
timeout 120 $b/host --backend gpu managed migration
echo "migration rc $?"
timeout 90 $b/host --backend gpu managed thrashing
echo "thrashing rc $?"
timeout 90 $b/host --backend gpu managed partial
echo "partial rc $?"
} > $OUT/managed.txt 2>&1
tail -3 $OUT/managed.txt >> $OUT/run.txt
