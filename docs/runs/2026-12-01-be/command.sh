#!/usr/bin/env bash
# Run be: change 87, the warp-tiled matmul with 128 outputs per lane (256×128, 128×256 and a
# 128×128 with 64×64 warp tiles) beside the 128×128 rung, each with its twin and cuBLAS, at 1024³
# to 8192³; ptxas of the twins; the matmul GPU suite; memcheck on the new kernels; ncu at 4096³.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/matmul_warp_tiled.cu -o /tmp/wt.ptx >> $OUT/nvcc.txt 2>&1 && ptxas -arch=sm_90a -v /tmp/wt.ptx -o /tmp/x.cubin >> $OUT/ptxas.txt 2>&1
h="$b/host --backend gpu --cuda-c $b/cuda-c"
V="matmul_warp_tiled matmul_warp_tiled_256x128 matmul_warp_tiled_128x256 matmul_warp_tiled_128x128_wide"
{
for s in 4096 8192 2048 1024; do
  for v in $V; do
    timeout 60 $h matmul --m $s --n $s --k $s --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 240 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
for v in 256x128 128x256 128x128_wide; do
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 99 --variant matmul_warp_tiled_$v --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $v rc $?" >> $OUT/run.txt
done
timeout 120 ncu --target-processes all -k regex:"matmul_warp_tiled(_256x128)?$" --launch-skip 0 --launch-count 4 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats \
  $b/host --backend gpu matmul --m 4096 --n 4096 --k 4096 --variant all --runs 1 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt; grep -E "Compiling entry|registers" $OUT/ptxas.txt | paste - - | cut -c1-160
grep -E "matmul_warp|cublas|Rust/CUDA C" $OUT/demos.txt | cut -c1-140
grep -E "^  [a-z_]+.*\(|Duration|Issue Slots Busy|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|Executed Ipc" $OUT/ncu.txt | head -40
