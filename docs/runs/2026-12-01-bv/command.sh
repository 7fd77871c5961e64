#!/usr/bin/env bash
# Run bv: change 96, the multistage rungs (cp.async three stages) timed for the first time: the
# matmul GPU suite; every variant beside its twin at 1024³ and 4096³; the wide warp tiles, the
# multistage tiles and auto at 8192³; the split tiles beside the fixed split twin (red, not atom)
# at 1024³ and the skinny shapes; memcheck and racecheck on the multistage kernels; Nsight
# Compute's stall reasons for multistage 128×256 and cuBLAS at 4096³.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
grep -E "multistage|split_k" -A3 /tmp/prep-out/environment.txt | grep -E "registers|spill" | head -8 >> $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 120 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
timeout 60 $h matmul --m 1024 --n 1024 --k 1024 --variant all --runs 20
timeout 120 $h matmul --m 4096 --n 4096 --k 4096 --variant all --runs 10
for v in warp_tiled_128x128_wide warp_tiled_128x256_wide multistage multistage_128x256 multistage_128x64 auto; do
  timeout 40 $h matmul --m 8192 --n 8192 --k 8192 --variant $v --runs 10
done
for v in multistage_128x256 warp_tiled_128x256_wide multistage; do
  timeout 40 $h matmul --m 8192 --n 2048 --k 4096 --variant $v --runs 20
  timeout 40 $h matmul --m 4097 --n 3073 --k 2049 --variant $v --runs 20
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
{
for round in 1 2; do
timeout 30 $h matmul --m 1024 --n 1024 --k 1024 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 8192 --n 64 --k 8192 --variant matmul_split_k_128x64 --runs 20
timeout 30 $h matmul --m 64 --n 8192 --k 8192 --variant matmul_split_k_64x128 --runs 20
timeout 30 $h matmul --m 256 --n 256 --k 65536 --variant matmul_split_k_64x128 --runs 20
done
} > $OUT/split.txt 2>&1; echo "split rc $?" >> $OUT/run.txt
for v in matmul_multistage matmul_multistage_128x256 matmul_multistage_128x64; do
  for s in "301 519 999" "2 3 1000"; do
    set -- $s
    timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant $v --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck $v $s rc $?" >> $OUT/run.txt
  done
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 999 --variant $v --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "racecheck $v rc $?" >> $OUT/run.txt
done
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait not_selected lg_throttle membar no_instruction; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
timeout 150 ncu --clock-control none --target-processes all -k regex:"multistage|gemm|sgemm|Kernel" --launch-skip 0 --launch-count 6 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed$m \
  $b/host --backend gpu matmul --m 4096 --n 4096 --k 4096 --variant matmul_multistage_128x256 --runs 2 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cp /tmp/prep-out/sass.txt.gz $OUT/ 2>/dev/null
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "cublas|Rust/CUDA C|multistage|warp_tiled_128|split|auto" $OUT/demos.txt $OUT/split.txt | cut -c1-170
grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time|registers|warps_active|issue_active|pipe_fma|bank_conf|stalled_(long|short|barrier|wait|dispatch|not_sel|lg|membar|mio|math|no_in)" $OUT/ncu.txt | head -60
