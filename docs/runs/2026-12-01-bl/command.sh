#!/usr/bin/env bash
# Run bl: after change 90, `host autotune --family matmul` again for the carried profile (split-k's
# medians moved).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/u unpack > $OUT/prep.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
timeout 150 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -A14 "occupancy rule" $OUT/autotune.txt | head -16
