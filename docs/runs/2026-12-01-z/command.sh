# Run z: change 76, thrashing's eighth way: pinned copies read as they land with the rounds
# overlapped (two device and two pinned arrays; round i's kernel and copies, on two streams, run
# while the CPU reads round i-1's chunks). The thrashing GPU test, then `managed thrashing` at 2^26.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 100 /tmp/tt/tests/host-gpu-test --include-ignored thrashing > $OUT/tests.txt 2>&1; echo "thrashing test rc $?" > $OUT/run.txt
timeout 150 $b/host --backend gpu managed thrashing --json-out $OUT/thrashing.json > $OUT/thrashing.txt 2>&1; echo "thrashing rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; python3 -c "
import json
d=json.load(open('$OUT/thrashing.json'))
for r in d['results']: print(r['variant'], '|', r['size'], '|', r['timing']['median_ms'], r['status'])
"
