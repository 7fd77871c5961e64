#!/usr/bin/env bash
# Run g (2026-12-04): change 111 (the softmax, scan and convolution families on views).
# gpud/ (not in git): host_now.gz, this commit's stripped release `host`; host_before.gz, 62052e0's
# (these families' PTX then identical to d5a878c's); tw_before and tw_now, the nvcc-made PTX
# (CUDA 13.0.88, -O3) of the 21 CUDA C twins before and after they took (pointer, length) pairs.
# Every family against its twin, before and now, median of 30, two rounds: softmax at 65536 × 1024,
# 65536 × 1001 (the scalar path), 4096 × 32768 (the wide rungs); scan and scan-i32 at 2^28 and
# 10^8 + 7; conv2d at 8192² with 3×3, 5×5 and 7×7 filters and at 8191 × 8191 (the 4-byte path).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/g; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for round in 1 2; do
  for side in before now; do
    echo "== round $round $side"
    for args in "softmax" "softmax --cols 1001" "softmax --rows 4096 --cols 32768" \
                "scan" "scan --n 100000007" "scan-i32" "scan-i32 --n 100000007" \
                "conv2d --filter 3" "conv2d" "conv2d --filter 7" "conv2d --height 8191 --width 8191"; do
      echo "-- $args"
      $x/host_$side --backend gpu --cuda-c gpud/tw_$side --runs 30 $args 2>&1 | grep -E "Rust/CUDA C|error|fail"
    done
  done
done 2>&1 | tee $OUT/ab.log
