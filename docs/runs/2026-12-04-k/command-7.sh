#!/usr/bin/env bash
# Run k, part 7: the extension's tests on the runner with the commit's kernels (4718698's, the
# wheel of this commit), the special-values test now with two shapes whose k the persistent rungs
# and the small-m kernels cut into runs (16 × 64 × 2048, 3 × 520 × 3000).
set -u
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 400 python3 -m unittest discover -v -s gpud/bt/python/tests > "$OUT/torch-tests.log" 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"
grep -E "^Ran |^OK|FAILED|Error|skipped|products_give" "$OUT/torch-tests.log" | head -30
