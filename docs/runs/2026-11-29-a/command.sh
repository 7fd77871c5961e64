#!/usr/bin/env bash
# Run 2026-11-29-a: the command was not recorded. Its files (all.txt, all.json, info.txt) are those
# of the first bundle's run.sh: `host --backend gpu info`, then `host --backend gpu --cuda-c DIR all
# --json-out all.json` (before run.sh had tests or the sanitizer).
set -u
bash target/gpu-bundle/run.sh $OUT
