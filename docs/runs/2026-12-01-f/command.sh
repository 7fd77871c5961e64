# Run f: where an operator call's microseconds go (host/python/call_cost.py), before the changes.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $b/python/*.whl > $OUT/pip.txt 2>&1
cp host/python/call_cost.py /tmp/call_cost.py; PYTHONPATH=$site python3 /tmp/call_cost.py --json $OUT/call-cost.json 2>&1 | tee $OUT/call-cost.txt
