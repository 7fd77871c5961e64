#!/usr/bin/env bash
# Run az: change 85, the scan's tile staged in shared memory (scan_look_back_staged, six blocks per
# SM) beside scan_look_back_ordered, each with its twin and CUB, 2^22 to 2^30; ptxas of the twins;
# the scan families' GPU suite; memcheck and racecheck on the new kernel; ncu occupancy and
# throughput of both at 2^28.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export CUB_ANCHORS=$PWD/$b/libcub_anchors.so LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
for f in scan_look_back_ordered scan_look_back_staged; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$f.cu -o /tmp/$f.ptx >> $OUT/nvcc.txt 2>&1 && ptxas -arch=sm_90a -v /tmp/$f.ptx -o /tmp/x.cubin >> $OUT/ptxas.txt 2>&1
done
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for k in 22 24 26 28 30; do
  for v in scan_look_back_ordered scan_look_back_staged; do
    timeout 60 $h scan --n $((1 << k)) --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=scan,scan_i32 timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for t in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu scan --n 1000003 --variant scan_look_back_staged --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t rc $?" >> $OUT/run.txt
done
timeout 150 ncu --target-processes all -k regex:"scan_look_back_(ordered|staged)$" --launch-skip 0 --launch-count 8 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
  --metrics launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  $b/host --backend gpu scan --n 268435456 --variant all --runs 1 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt; grep -E "Compiling entry|registers" $OUT/ptxas.txt | paste - - | cut -c1-160
grep -E "cub_inclusive|scan_look_back|Rust/CUDA C" $OUT/demos.txt | cut -c1-130
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|launch__occupancy|sm__warps_active|Warp Cycles Per Issued" $OUT/ncu.txt | head -60
