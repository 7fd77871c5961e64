#!/usr/bin/env bash
# Run ac: host autotune for conv2d (rolling V = 4 and V = 8), then --variant auto with that profile.
set -u
b=target/gpu-bundle
timeout 150 $b/host --backend gpu autotune --family conv2d --out $OUT/profile-conv2d.json > $OUT/autotune.txt 2>&1
echo "autotune rc $?" >> $OUT/run.txt
KERNELS_TILE_PROFILE=$OUT/profile-conv2d.json timeout 40 $b/host --backend gpu conv2d --variant auto --runs 20 > $OUT/auto.txt 2>&1
echo "auto rc $?" >> $OUT/run.txt
