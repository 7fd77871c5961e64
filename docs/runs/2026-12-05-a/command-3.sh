# Run 2026-12-05 a, third call (run with carry ["gpud"], the torch bundle in gpud/bt): bench_attention, the extension's tests, bench_torch.
set -u
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_attention.py --backward --json "$OUT/torch-attention.json" > "$OUT/torch-attention.log" 2>&1
echo "bench_attention rc $?"; grep -E "geomean|DIFFERS" "$OUT/torch-attention.log"
PYTHONPATH="$site" timeout 130 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $?"; tail -3 $OUT/unittest.log
PYTHONPATH="$site" timeout 140 python3 gpud/bt/python/bench_torch.py --json "$OUT/torch-ops.json" > "$OUT/torch-ops.log" 2>&1
echo "bench_torch rc $?"; grep -E "norm|cross|decode|attention|sum" "$OUT/torch-ops.log"
