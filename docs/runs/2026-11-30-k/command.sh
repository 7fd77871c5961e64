#!/usr/bin/env bash
# Run 2026-11-30-k: conv2d demos on the GPU after change 8 (second form), and the emulator family
# test on the runner. As output.txt records it (in target/gpu-bundle on the runner):
#   for cu in cuda-c-src/conv2d_*.cu; do nvcc -arch=sm_90 -O3 -ptx $cu -o cc/$(basename $cu .cu).ptx; done
#   ptxas -arch=sm_90 -v ptx/sm_90/kernels.ptx -o /tmp/r.cubin | grep conv2d_blocked
#   for f in 3 5 7; do ./host --backend gpu --cuda-c cc conv2d --filter $f --variant all; done
#   tests/host-families-test
