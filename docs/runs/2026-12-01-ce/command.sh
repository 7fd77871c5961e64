#!/usr/bin/env bash
# Run ce: change 98 under compute-sanitizer (memcheck and racecheck, the three multistage rungs on
# an odd shape), then `auto` at the ten bench shapes under run cb's profile (the host's timing:
# interleaved with cuBLAS, median of 20). The bundle of runs cb–cd, kept on the machine.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
: > $OUT/run.txt
for tool in memcheck racecheck; do
  for v in multistage multistage_128x256 multistage_128x64; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $b/host --backend gpu matmul --m 259 --n 131 --k 67 --variant $v --runs 1 --warmup 0 > /tmp/san.txt 2>&1
    echo "$tool $v rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tr -s ' ')" >> $OUT/run.txt
  done
done
export KERNELS_TILE_PROFILE=$PWD/docs/runs/2026-12-01-cb/tile-profile.json
for s in "1024 1024 1024" "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "8192 2048 4096" "8192 64 8192" "64 8192 8192" "8192 8192 64" "256 256 65536" "4097 3073 2049"; do
  set -- $s
  timeout 40 $b/host --backend gpu matmul --m $1 --n $2 --k $3 --variant auto --runs 20 >> $OUT/auto.txt 2>&1; echo "auto $s rc $?" >> $OUT/run.txt
done
cat $OUT/run.txt
grep -E "note: --variant auto|\| matmul" $OUT/auto.txt | cut -c1-170
