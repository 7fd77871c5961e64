#!/usr/bin/env bash
# Run bx: the multistage tiles as committed (fragments from the thread's corners on 128×64 only,
# change 97 narrowed: the 128×128 and 128×256 SASS identical to run bv's, the 128×64 to run bw's):
# the matmul GPU suite; `host autotune --family matmul` for the carried profile, then `auto` at
# the ten bench shapes under it; every rung beside its twin at 1024³, 2048³ and 4096³; the PyTorch
# extension's tests and benchmark with run bw's profile carried (same picks).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/prep-out prep > /tmp/prep.txt 2>&1; echo "prep rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
TEST_FAMILIES=matmul timeout 120 $b/tests/host-gpu-test --include-ignored > /tmp/tests.txt 2>&1; echo "tests rc $?" >> $OUT/run.txt
grep -h "test result\|FAILED\|panicked" /tmp/tests.txt >> $OUT/run.txt
timeout 150 $b/host --backend gpu autotune --family matmul --out $OUT/tile-profile.json > $OUT/autotune.txt 2>&1; echo "autotune rc $?" >> $OUT/run.txt
for s in "1024 1024 1024" "8192 64 8192" "64 8192 8192" "256 256 65536" "8192 8192 64" "4097 3073 2049" "2048 2048 2048" "4096 4096 4096" "8192 2048 4096" "8192 8192 8192"; do
  set -- $s
  KERNELS_TILE_PROFILE=$OUT/tile-profile.json timeout 40 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant auto --runs 20 >> $OUT/auto.txt 2>&1; echo "auto $s rc $?" >> $OUT/run.txt
done
h="$b/host --backend gpu --cuda-c $b/cuda-c"
for s in 1024 2048 4096; do
  timeout 120 $h matmul --m $s --n $s --k $s --variant all --runs 10 >> $OUT/all.txt 2>&1; echo "all $s rc $?" >> $OUT/run.txt
done
timeout 200 bash $b/run.sh /tmp/torch torch > /tmp/torch-run.txt 2>&1; echo "torch rc $?" >> $OUT/run.txt
cp /tmp/torch/torch-ops.json $OUT/ 2>/dev/null; cp /tmp/torch/torch.log $OUT/ 2>/dev/null
cat $OUT/run.txt
grep -E "Rust/CUDA C" $OUT/all.txt | cut -c1-120
grep -E "note: --variant auto|\| matmul" $OUT/auto.txt | cut -c1-170
grep -E "^Ran |^OK|FAILED|matmul" /tmp/torch/torch.log | head -10
