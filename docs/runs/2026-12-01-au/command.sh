#!/usr/bin/env bash
# Run au: change 84 (the skewed transpose: each block owns whole aligned chunks of its output rows).
# Every transpose beside its twin at aligned and awkward shapes, the transpose GPU suite, memcheck
# and racecheck on the new kernel (interior and edge blocks), ncu of peeled and skewed at 8191x4097.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "8191 4097" "4097 8191" "8188 4096" "8192 4096" "8192 8192" "16384 16384" "4096 4096" "12345 6789"; do
  set -- $s
  timeout 90 $h transpose --rows $1 --cols $2 --variant all --runs 30
done
} > $OUT/demos.txt 2>&1
echo "demos rc $?" >> $OUT/run.txt
TEST_FAMILIES=transpose timeout 200 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
for tool in memcheck racecheck; do
  for s in "1000 777" "8191 4097"; do
    set -- $s
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $b/host --backend gpu transpose --rows $1 --cols $2 --variant transpose_skewed --runs 1 >> $OUT/sanitizer.txt 2>&1; echo "$tool $1x$2 rc $?" >> $OUT/run.txt
  done
done
m=gpu__time_duration.sum,sm__inst_executed.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
for s in "8191 4097" "8192 4096"; do
  set -- $s
  for v in transpose_peeled transpose_skewed transpose_vectorized_t64; do
    echo "== $v $1x$2"
    timeout 60 ncu --kernel-name regex:"^$v\$" --launch-skip 3 --launch-count 1 --metrics $m --section WarpStateStats \
      $b/host --backend gpu transpose --rows $1 --cols $2 --variant $v --runs 5 2>&1 | grep -vE "^\s*$|==PROF==|^\| " | grep -E "gpu__|sm__|smsp__|l1tex__|lts__|dram__|Stall|Warp Cycles|ERROR|error|==" 
  done
done > $OUT/ncu.txt 2>&1
echo "ncu rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt >> $OUT/run.txt
grep -iE "error|fail" $OUT/prep.txt | head -5 >> $OUT/run.txt
cat $OUT/run.txt
grep -E "transpose_(vectorized_t64|peeled|skewed)" $OUT/demos.txt | cut -c1-150
