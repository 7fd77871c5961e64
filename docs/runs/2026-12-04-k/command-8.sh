#!/usr/bin/env bash
# Run k, part 8: where the persistent bf16 rung loses at ViT/BERT widths (0.51× PyTorch at 12608 and
# 16384 tokens): Nsight Compute on the rung and on cuBLAS's kernel at 16384 × 3072 × 768 and, for
# comparison, 8192³. Clocks not locked. The commit's host (4718698's kernels).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
for mnk in "16384 3072 768" "8192 8192 8192"; do
  set -- $mnk
  for kernel in matmul_bf16_persistent regex:nvjet; do
    timeout 120 ncu --clock-control none --kernel-name $kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
      $x/host_now --backend gpu --warmup 2 --runs 3 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent \
      > $OUT/ncu-$1x$2x$3-${kernel#regex:}.txt 2>&1
    echo "ncu $kernel $1x$2x$3 rc $?"
  done
done
grep -hE "Duration|DRAM Throughput|L2 Cache Throughput|dram__bytes|lts__t_sector_hit|xbar2l1tex|hmma|Grid Size|Compute \(SM\) Throughput|^  [a-z_]+.*\(" $OUT/ncu-*.txt | head -80
