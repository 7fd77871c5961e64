#!/usr/bin/env bash
# Run k, part 3: why the split persistent bf16 rung streams B at 1.7–2.7 TB/s where cuBLAS reaches
# 3.1–3.3 (part 1): Nsight Compute on the rung and on cuBLAS's kernel at 128 × 11008 × 4096 (43
# tiles in 3 runs) and 16 × 4096 × 11008 (16 tiles in 8 runs). Clocks not locked.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
for mnk in "128 11008 4096" "16 4096 11008"; do
  set -- $mnk
  for kernel in matmul_bf16_persistent regex:nvjet; do
    timeout 90 ncu --clock-control none --kernel-name $kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
      --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,l1tex__m_xbar2l1tex_read_bytes.sum \
      $x/host_now --backend gpu --warmup 2 --runs 3 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent \
      > $OUT/ncu-$1x$2x$3-${kernel#regex:}.txt 2>&1
    echo "ncu $kernel $1x$2x$3 rc $?"
  done
done
grep -hE "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|dram__bytes|lts__t_sector_hit|xbar2l1tex|Grid Size|Registers|Block Size|Function Name|^  [a-z_]+.*\(" $OUT/ncu-*.txt | head -80
