#!/usr/bin/env bash
# Run ao: what run an's file count left behind, and why conv2d 5x5 stays at 76 %: the thrashing
# GPU test and `managed thrashing` twice (change 80's ninth way), the conv2d autotune as JSON for
# the carried profile, and Nsight Compute on one conv2d_rolling_v4 launch at 8192² 5×5 at the
# GPU's own clocks (--clock-control none: the demos run at boost, ncu's default locks the base).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/unpacked unpack > /tmp/unpack.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
timeout 120 $b/tests/host-gpu-test --include-ignored thrashing > $OUT/tests.txt 2>&1; echo "thrashing test rc $?" >> $OUT/run.txt
for i in 1 2; do
  echo "== round $i" >> $OUT/thrashing.txt
  timeout 150 $b/host --backend gpu managed thrashing --json-out $OUT/thrashing-$i.json >> $OUT/thrashing.txt 2>&1; echo "thrashing $i rc $?" >> $OUT/run.txt
done
timeout 120 $b/host --backend gpu autotune --family conv2d --out $OUT/profile.json > /tmp/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
timeout 200 ncu --clock-control none -k regex:"conv2d_rolling_v4" --launch-skip 0 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats \
  $b/host --backend gpu conv2d --height 8192 --width 8192 --filter 5 --variant conv2d_rolling_v4 --runs 1 --warmup 0 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; tail -n 8 /tmp/autotune.txt
python3 -c "
import json
for i in (1, 2):
    d=json.load(open('$OUT/thrashing-%d.json' % i))
    for r in d['results']: print(i, r['variant'], '|', r['size'], '|', r['timing']['median_ms'], r['status'])
"
grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|L2 Hit|Mem Busy|Max Bandwidth|Waves Per SM|SM Frequency|DRAM Frequency|Elapsed Cycles|L1/TEX Hit|Eligible Warps|Active Warps" $OUT/ncu.txt | head -60
