#!/usr/bin/env bash
# Run h (2026-12-04): issue 38's model-shape suite, first measurement: the operators against
# PyTorch's `a @ b` on the 97 products of benches/shapes/models.json, f32, TF32 and bf16.
# gpud/bt (not in git): `cargo xtask gpu-bundle --for torch` at this commit (the wheel and the
# scripts).
set -u
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
PYTHONPATH="$site" python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" 2>&1 | tee "$OUT/models.log"
echo "bench_models rc ${PIPESTATUS[0]}"
