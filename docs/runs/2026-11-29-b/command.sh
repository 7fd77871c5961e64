#!/usr/bin/env bash
# Run 2026-11-29-b: the command was not recorded. Its files (all.txt, all.json, info.txt,
# sanitizer.txt) are those of the bundle's run.sh of the time: compute-sanitizer over `host smoke`,
# `host --backend gpu info`, then `host --backend gpu --cuda-c DIR all --json-out all.json`.
set -u
bash target/gpu-bundle/run.sh $OUT
