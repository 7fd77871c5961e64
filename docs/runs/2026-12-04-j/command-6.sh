#!/usr/bin/env bash
# Run j, part 6: the whole model-shape suite (97 products, f32, TF32, bf16) through this commit's
# operators against PyTorch, as run h measured it before the small-m kernels.
set -u
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
s=$(date +%s)
PYTHONPATH="$site" timeout 400 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -3 "$OUT/models.log"
