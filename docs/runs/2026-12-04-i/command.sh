#!/usr/bin/env bash
# Run i (2026-12-04): `host models` (issue 38's suite against cuBLAS) for the first time, each
# dtype in its own call so that one running out of time leaves the others' results.
# gpud/host_models.gz (not in git): this commit's release `host`.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
h=/tmp/i/host; mkdir -p /tmp/i && gunzip -c gpud/host_models.gz > $h && chmod +x $h
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
for d in bf16:150 tf32:150 f32:170; do
  dtype=${d%:*}; limit=${d#*:}; s=$(date +%s)
  timeout $limit $h --backend gpu --warmup 2 --runs 10 models --dtypes $dtype --json-out $OUT/models-$dtype.json > $OUT/models-$dtype.log 2>&1
  echo "$dtype rc $? in $(( $(date +%s) - s )) s"; tail -1 $OUT/models-$dtype.log
done
