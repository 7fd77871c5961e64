#!/usr/bin/env bash
# Run j, part 7: the PyTorch extension's tests on the runner with this commit's wheel (gpud/bt):
# every operator and variant against PyTorch on edge shapes (the small-m variants among them),
# special values through the matmul operators, torch.compile, autograd.
set -u
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 400 python3 -m unittest discover -v -s gpud/bt/python/tests > "$OUT/torch-tests.log" 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"
grep -E "^Ran |^OK|FAILED|Error|matmul" "$OUT/torch-tests.log" | head -30
