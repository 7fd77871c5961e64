#!/usr/bin/env bash
# Run 2026-12-07 q, the Python part (see command.sh). carry ["gpud"]: gpud/bt, this tree's wheel.
# `python.sh tests`: the extension's FP8 tests only; `python.sh suites`: the two suites only.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/python.txt") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
part=${1:-all}
if [ $part != suites ]; then
s=$(date +%s)
(cd host/python/tests && PYTHONPATH=/tmp/site timeout 200 python3 -m unittest -k fp8 test_torch 2>&1 | tail -5)
echo "fp8 tests in $(( $(date +%s) - s )) s"
fi
[ $part = tests ] && exit 0
s=$(date +%s)
PYTHONPATH=/tmp/site timeout 150 python3 -u docs/runs/2026-12-07-p/fp8_models.py gpud/bt/python > $OUT/fp8-models.txt 2>&1
echo "fp8 models rc $? in $(( $(date +%s) - s )) s"; tail -45 $OUT/fp8-models.txt
s=$(date +%s)
PYTHONPATH=/tmp/site:gpud/bt/python timeout 110 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
date -u
