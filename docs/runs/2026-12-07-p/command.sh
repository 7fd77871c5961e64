#!/usr/bin/env bash
# Run 2026-12-07 p: the figures at 184b75e for the closing note. carry ["gpud"]: gpud/bt, the wheel
# from 184b75e. Steps: 1: the model-shape suite's products in FP8 against torch._scaled_mm
# (fp8_models.py, issue 42); 2: the suite's bf16 products against PyTorch (issue 38, change 165).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/p.txt") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH=/tmp/site timeout 150 python3 -u docs/runs/2026-12-07-p/fp8_models.py gpud/bt/python > $OUT/fp8-models.txt 2>&1
echo "fp8 models rc $? in $(( $(date +%s) - s )) s"; cat $OUT/fp8-models.txt | tail -60
s=$(date +%s)
PYTHONPATH=/tmp/site:gpud/bt/python timeout 110 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
