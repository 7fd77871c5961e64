#!/usr/bin/env bash
# Run as: change 82 (the mapped way with vec_add_vectorized): the thrashing GPU test, then
# `managed thrashing` twice at 2^26 (the mapped way beside the copies read as they land and plain
# managed memory in the same tables).
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/unpacked unpack > /tmp/unpack.txt 2>&1; echo "unpack rc $?" > $OUT/run.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export HOST_BIN=$PWD/$b/host
timeout 120 $b/tests/host-gpu-test --include-ignored thrashing > $OUT/tests.txt 2>&1; echo "thrashing test rc $?" >> $OUT/run.txt
for i in 1 2; do
  echo "== round $i" >> $OUT/thrashing.txt
  timeout 150 $b/host --backend gpu managed thrashing --json-out $OUT/thrashing-$i.json >> $OUT/thrashing.txt 2>&1; echo "thrashing $i rc $?" >> $OUT/run.txt
done
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt
python3 -c "
import json
for i in (1, 2):
    d=json.load(open('$OUT/thrashing-%d.json' % i))
    for r in d['results']: print(i, r['variant'], '|', r['size'], '|', r['timing']['median_ms'], r['status'])
"
