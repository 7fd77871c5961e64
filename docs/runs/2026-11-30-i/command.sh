#!/usr/bin/env bash
# Run 2026-11-30-i: the command was not recorded. Its files (SASS.md, all.json, all.txt, banks.txt,
# environment.txt, info.txt, sanitizer.txt, tests.log) are those the GPU bundle's run.sh wrote in
# its default mode (check) at the time: environment and CUDA C twins, the test executables,
# compute-sanitizer over `host smoke`, `host info`, then `host --cuda-c DIR all`.
set -u
bash target/gpu-bundle/run.sh $OUT
