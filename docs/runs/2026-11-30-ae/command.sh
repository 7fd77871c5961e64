#!/usr/bin/env bash
# Run ae: GPU suite (transpose, conv2d, gather families; every other test, managed ones included) + sanitizers.
set -u
b=target/gpu-bundle
TEST_FAMILIES=transpose,conv2d,gather timeout 560 bash $b/run.sh $OUT tests > $OUT/run.txt 2>&1
echo "tests rc $?" >> $OUT/run.txt
