#!/usr/bin/env bash
# Run aj: the PyTorch extension with sum and cumsum (tests, benchmark), and `host managed`
# end to end (kernel time on prefetched managed memory against device memory).
set -u
b=target/gpu-bundle
timeout 240 bash $b/run.sh $OUT torch > $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
timeout 120 $b/host --backend gpu managed --runs 10 > $OUT/managed.txt 2>&1
echo "managed rc $?" >> $OUT/run.txt
