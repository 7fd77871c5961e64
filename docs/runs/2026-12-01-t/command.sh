# Run t: why the single-pass scans stay at 0.80-0.83x CUB (issue 10): the ordered look-back scan
# and CUB's DeviceScan at 2^28 side by side, then Nsight Compute on one launch of each (speed of
# light, occupancy, warp states, memory workload) to see what differs.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvcc -arch=sm_90a -O3 -shared -Xcompiler -fPIC $b/cub/anchors.cu -o /tmp/libcub_anchors.so > $OUT/nvcc.txt 2>&1; echo "nvcc rc $?" > $OUT/run.txt
export CUB_ANCHORS=/tmp/libcub_anchors.so
timeout 120 $b/host --backend gpu scan --n 268435456 --variant scan_look_back_ordered --json-out $OUT/scan.json > $OUT/scan.txt 2>&1; echo "scan rc $?" >> $OUT/run.txt
timeout 240 ncu --target-processes all -k regex:"scan_look_back_ordered|DeviceScan" --launch-skip 0 --launch-count 6 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats \
  $b/host --backend gpu scan --n 268435456 --variant scan_look_back_ordered --runs 1 --warmup 0 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; cut -c1-200 $OUT/scan.txt; grep -E "^  [a-zA-Z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Stall|L2 Hit|Mem Busy|Max Bandwidth|Waves Per SM|Static Shared|Dynamic Shared" $OUT/ncu.txt | head -150
