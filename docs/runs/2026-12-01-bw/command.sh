#!/usr/bin/env bash
# Run bw: change 97, multistage's fragments read from each thread's corner of the slices
# (`SharedMatrix::window`: immediate offsets, 30 fewer instructions per step): the matmul GPU
# suite; the multistage tiles beside their twins at 1024³, 4096³, 8192³ and 4097×3073×2049;
# memcheck and racecheck on them; `host autotune --family matmul` with the multistage tiles now
# among the configurations, then `auto` at the ten bench shapes under the new profile; the
# PyTorch extension's tests and benchmark; issue 9's A/B: conv2d_rolling_v4 built for radius 2
# alone at 8 blocks per SM (64 registers; ab/conv, made here by hand, not committed) loaded as
# the "CUDA C" twin beside the current kernel, 5×5 filters at 8192² and 16384².
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 120 $b/tests/host-gpu-test --include-ignored > /tmp/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" /tmp/tests.txt >> $OUT/run.txt
h="$b/host --backend gpu --cuda-c $b/cuda-c"
{
for s in "1024 1024 1024" "4096 4096 4096" "8192 8192 8192" "4097 3073 2049"; do
  set -- $s
  for v in multistage_128x64 multistage multistage_128x256; do
    timeout 40 $h matmul --m $1 --n $2 --k $3 --variant $v --runs 20
  done
done
} > $OUT/demos.txt 2>&1; echo "demos rc $?" >> $OUT/run.txt
for v in matmul_multistage matmul_multistage_128x256 matmul_multistage_128x64; do
  for s in "301 519 999" "2 3 1000"; do
    set -- $s
    timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant $v --runs 1 --warmup 0 >> /tmp/san.txt 2>&1; echo "memcheck $v $s rc $?" >> $OUT/run.txt
  done
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 $b/host --backend gpu matmul --m 301 --n 519 --k 999 --variant $v --runs 1 --warmup 0 >> /tmp/san.txt 2>&1; echo "racecheck $v rc $?" >> $OUT/run.txt
done
grep -E "SUMMARY" /tmp/san.txt | sort | uniq -c >> $OUT/run.txt
timeout 150 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
for s in "1024 1024 1024" "8192 64 8192" "64 8192 8192" "256 256 65536" "8192 8192 64" "4097 3073 2049" "2048 2048 2048" "4096 4096 4096" "8192 2048 4096" "8192 8192 8192"; do
  set -- $s
  KERNELS_TILE_PROFILE=$OUT/tile-profile.json timeout 40 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant auto --runs 20 >> $OUT/auto.txt 2>&1; echo "auto $s rc $?" >> $OUT/run.txt
done
{
for s in 8192 16384; do
  for round in 1 2; do
    timeout 60 $b/host --backend gpu --cuda-c ab/conv conv2d --height $s --width $s --filter 5 --variant conv2d_rolling_v4 --runs 20
  done
done
} > $OUT/conv.txt 2>&1; echo "conv rc $?" >> $OUT/run.txt
timeout 200 bash $b/run.sh /tmp/torch torch > /tmp/torch-run.txt 2>&1; echo "torch rc $?" >> $OUT/run.txt
cp /tmp/torch/torch-ops.json $OUT/ 2>/dev/null; cp /tmp/torch/torch.log $OUT/ 2>/dev/null
cat $OUT/run.txt
grep -E "Rust/CUDA C|ceilings" $OUT/demos.txt $OUT/conv.txt | cut -c1-160
grep -E "note: --variant auto|\| matmul" $OUT/auto.txt | cut -c1-170
grep -E "^Ran |^OK|FAILED|rust/pytorch" /tmp/torch/torch.log | head -30
