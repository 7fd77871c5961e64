#!/usr/bin/env bash
# Run ah: ncu DRAM and L2 sector counts of the transposes at one size aligned and not: do partial
# 32-byte sectors at tile edges cost DRAM reads?
set -u
b=target/gpu-bundle
m=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum
for s in "8192 4096" "8188 4096" "8191 4097"; do
  set -- $s
  for v in transpose_vectorized_t64 transpose_peeled; do
    echo "== $v $1x$2"
    timeout 60 ncu --kernel-name regex:"^$v\$" --launch-skip 3 --launch-count 1 --metrics $m \
      $b/host --backend gpu transpose --rows $1 --cols $2 --variant $v --runs 5 2>&1 | grep -E "dram__|lts__|gpu__time|ERROR|error" 
  done
done > $OUT/ncu.txt 2>&1
echo "ncu rc $?" > $OUT/run.txt
