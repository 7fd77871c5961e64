#!/usr/bin/env bash
# Run 2026-11-30-n: the command was not recorded. Its files (all.json, all.txt, banks.txt,
# environment.txt, info.txt, sass.txt.gz) are those of the bundle's run.sh in demos mode: CUDA C
# twins and SASS, `host info`, `host bank-conflicts`, then `host --cuda-c DIR all`.
set -u
bash target/gpu-bundle/run.sh $OUT demos
