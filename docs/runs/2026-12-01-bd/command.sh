#!/usr/bin/env bash
# Run bd: PyTorch's softmax timed as the bench anchors time it and as bench_torch.py does, on the
# anchors' inputs and on bench_torch's (softmax_check.py): which of run p's 1145 GB/s and run ba's
# 3964 GB/s at 65536 x 1024 is PyTorch's speed.
set -u
timeout 200 python3 docs/runs/2026-12-01-bd/softmax_check.py $OUT/softmax.json > $OUT/softmax.txt 2>&1; echo "rc $?" >> $OUT/softmax.txt
cat $OUT/softmax.txt
