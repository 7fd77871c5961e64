#!/usr/bin/env bash
# Run a (2026-12-03): the GPU suite of issue 41's work (bundle `cargo xtask gpu-bundle --for
# tests`, carried as target/gpu-bundle): every test with --include-ignored, the special-value
# checks of every family on the GPU among them (attention's new), and the four compute-sanitizer
# tools; the CUDA C twins and CUB's wrappers it builds kept for run b.
set -u
b=target/gpu-bundle
bash $b/run.sh $OUT tests > $OUT/run.txt 2>&1; echo "run.sh tests rc $?" >> $OUT/run.txt
mkdir -p target/keep && cp -r $b/cuda-c $b/libcub_anchors.so target/keep/
grep -E "^test .*(FAILED|ignored)|test result|failures:|panicked|ERROR SUMMARY|rc " $OUT/*.txt $OUT/*.log 2>/dev/null | tail -80
