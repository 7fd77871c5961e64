#!/usr/bin/env bash
# Run bi: change 89, B's slice stored with each group of four columns turned by one, so that
# every FFMA reads its B operand and its accumulator from different register banks while the
# results keep their 16-byte stores; every warp-tiled configuration and split-k beside its twin
# (unturned) and cuBLAS; the matmul GPU suite; memcheck; ncu stall reasons at 4096³.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > $OUT/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "4096 4096 4096" "8192 8192 8192" "2048 2048 2048" "8192 8192 64" "1024 1024 1024" "4097 3073 2049" "256 256 65536"; do
  set -- $s
  for v in matmul_warp_tiled matmul_warp_tiled_128x128_wide matmul_warp_tiled_128x256_wide matmul_warp_tiled_128x64 matmul_warp_tiled_64x64 matmul_split_k; do
    timeout 60 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 240 $b/tests/host-gpu-test --include-ignored > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" $OUT/tests.txt >> $OUT/run.txt
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 99 --variant all --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck rc $?" >> $OUT/run.txt
m=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall no_instruction wait selected not_selected; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
timeout 150 ncu --clock-control none --target-processes all -k regex:"matmul_warp_tiled(_128x128_wide)?$" --launch-skip 0 --launch-count 2 \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,launch__registers_per_thread$m \
  $b/host --backend gpu matmul --m 4096 --n 4096 --k 4096 --variant all --runs 1 --warmup 0 > $OUT/ncu.txt 2>&1; echo "ncu rc $?" >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt
grep -E "Rust/CUDA C" $OUT/demos.txt
grep -E "^  [a-zA-Z_0-9]+.*\(|stalled_(dispatch|wait|short|not_sel|barrier|math)|gpu__time|issue_active|pipe_fma|registers" $OUT/ncu.txt | head -40
