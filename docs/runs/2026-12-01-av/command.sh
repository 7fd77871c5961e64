#!/usr/bin/env bash
# Run av: change 84b (skewed: each staged chunk one 16-byte store where it lay, tile column c of row
# s at c + delta(s), four rows to a padded line) and 84c (skewed_lines: blocks of 128 rows, each
# output row's part from its 128-byte line, 159 rows staged). Demos of t64, peeled, skewed (with its
# twin) and skewed_lines at aligned and awkward shapes; ncu of the skewed kernels with stall reasons.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8191 4097" "4097 8191" "8188 4096" "8192 4096" "8192 8192" "16384 16384" "12345 6789"; do
  set -- $s
  for v in transpose_vectorized_t64 transpose_peeled transpose_skewed transpose_skewed_lines; do
    timeout 60 $h transpose --rows $1 --cols $2 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
st=""
for r in long_scoreboard short_scoreboard mio_throttle lg_throttle barrier not_selected wait math_pipe_throttle dispatch_stall no_instruction drain membar; do st="$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
m=gpu__time_duration.sum,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed$st
for s in "8191 4097" "8188 4096" "8192 4096"; do
  set -- $s
  for v in transpose_skewed transpose_skewed_lines transpose_vectorized_t64; do
    echo "== $v $1x$2"
    timeout 60 ncu --kernel-name regex:"^$v\$" --launch-skip 3 --launch-count 1 --metrics $m \
      $b/host --backend gpu transpose --rows $1 --cols $2 --variant $v --runs 5 2>&1 | grep -E "gpu__|sm__|smsp__|l1tex__|lts__|dram__|ERROR|error"
  done
done > $OUT/ncu.txt 2>&1
echo "ncu rc $?" >> $OUT/run.txt
grep -iE "error|fail" $OUT/prep.txt | head -5 >> $OUT/run.txt
cat $OUT/run.txt
grep -E "^\| transpose|Rust/CUDA C" $OUT/demos.txt | cut -c1-130
