#!/usr/bin/env bash
# Run 2026-11-30-b: why run a gave vec_add Rust/CUDA C = 0.939 (bundle of commit cafcec8, before
# the timing change). As experiment.txt records it, each line one `host` process:
#   for args in "vec-add" "vec-add" "--warmup 200 vec-add" "--runs 200 vec-add" "shared-mem-add" \
#               "--warmup 200 shared-mem-add"; do host --cuda-c cc $args; done
