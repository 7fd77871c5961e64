#!/usr/bin/env bash
# Run ax: change 84e: the skewed tiles with register bounds (skewed_packed: 64x64 at 8 blocks per SM; wide and
# tall at 6) and skewed_tall_rows (a warp writes 512 bytes of one output row); skewed unbounded for reference.
# Demos at aligned and awkward shapes, ncu L2 sectors, write requests and throughput at 8191x4097.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/unpacked unpack > /tmp/unpack.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
{
for s in "8191 4097" "4097 8191" "12345 6789" "8192 4096" "16384 16384"; do
  set -- $s
  for v in transpose_skewed transpose_skewed_packed transpose_skewed_wide transpose_skewed_tall transpose_skewed_tall_rows; do
    timeout 60 $b/host --backend gpu transpose --rows $1 --cols $2 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
m=gpu__time_duration.sum,sm__inst_executed.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
for v in transpose_skewed_packed transpose_skewed_tall_rows; do
  echo "== $v 8191x4097"
  timeout 60 ncu --kernel-name regex:"^$v\$" --launch-skip 3 --launch-count 1 --metrics $m \
    $b/host --backend gpu transpose --rows 8191 --cols 4097 --variant $v --runs 5 2>&1 | grep -E "gpu__|sm__|smsp__|l1tex__|lts__|dram__|ERROR|error"
done > $OUT/ncu.txt 2>&1
echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^\| transpose" $OUT/demos.txt | cut -c1-130
